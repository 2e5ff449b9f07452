// Attention as torch-mlir prints it: an explicit transpose of K, keep-dim softmax
// statistics through constant-0 maps: one FlashAttention kernel.
#x3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#k3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
func.func @attn(%q: tensor<4x64x32xf32>, %k: tensor<4x64x32xf32>, %v: tensor<4x64x32xf32>) -> tensor<4x64x32xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.17677669 : f32
  %et = tensor.empty() : tensor<4x32x64xf32>
  %kt = linalg.transpose ins(%k : tensor<4x64x32xf32>) outs(%et : tensor<4x32x64xf32>) permutation = [0, 2, 1]
  %es = tensor.empty() : tensor<4x64x64xf32>
  %is = linalg.fill ins(%zero : f32) outs(%es : tensor<4x64x64xf32>) -> tensor<4x64x64xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<4x64x32xf32>, tensor<4x32x64xf32>) outs(%is : tensor<4x64x64xf32>) -> tensor<4x64x64xf32>
  %ss = linalg.generic {indexing_maps = [#x3, #x3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<4x64x64xf32>) outs(%es : tensor<4x64x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %scale : f32
    linalg.yield %m : f32
  } -> tensor<4x64x64xf32>
  %e1 = tensor.empty() : tensor<4x64x1xf32>
  %im = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<4x64x1xf32>) -> tensor<4x64x1xf32>
  %mx = linalg.generic {indexing_maps = [#x3, #k3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%ss : tensor<4x64x64xf32>) outs(%im : tensor<4x64x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4x64x1xf32>
  %ex = linalg.generic {indexing_maps = [#x3, #k3, #x3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ss, %mx : tensor<4x64x64xf32>, tensor<4x64x1xf32>) outs(%es : tensor<4x64x64xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<4x64x64xf32>
  %iz = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x64x1xf32>) -> tensor<4x64x1xf32>
  %sm = linalg.generic {indexing_maps = [#x3, #k3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%ex : tensor<4x64x64xf32>) outs(%iz : tensor<4x64x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4x64x1xf32>
  %p = linalg.generic {indexing_maps = [#x3, #k3, #x3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ex, %sm : tensor<4x64x64xf32>, tensor<4x64x1xf32>) outs(%es : tensor<4x64x64xf32>) {
  ^bb0(%a: f32, %t: f32, %o: f32):
    %r = arith.divf %a, %t : f32
    linalg.yield %r : f32
  } -> tensor<4x64x64xf32>
  %eo = tensor.empty() : tensor<4x64x32xf32>
  %io = linalg.fill ins(%zero : f32) outs(%eo : tensor<4x64x32xf32>) -> tensor<4x64x32xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<4x64x64xf32>, tensor<4x64x32xf32>) outs(%io : tensor<4x64x32xf32>) -> tensor<4x64x32xf32>
  func.return %o : tensor<4x64x32xf32>
}
