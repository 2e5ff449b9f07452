// res + softmax(Q K^T) V, the last matmul accumulating into an argument: dividing by
// the row sum below the contraction would divide res too, so as written it is not
// FlashAttention; split-accumulator-init makes it P V from zeros, then + res, and
// FlashAttention divides P V alone (one kernel, res added in its epilogue).
#x = affine_map<(d0, d1) -> (d0, d1)>
#r = affine_map<(d0, d1) -> (d0)>
func.func @f(%q: tensor<4x8xf32>, %k: tensor<5x8xf32>, %v: tensor<5x8xf32>, %res: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %es = tensor.empty() : tensor<4x5xf32>
  %is = linalg.fill ins(%zero : f32) outs(%es : tensor<4x5xf32>) -> tensor<4x5xf32>
  %s = linalg.matmul_transpose_b ins(%q, %k : tensor<4x8xf32>, tensor<5x8xf32>) outs(%is : tensor<4x5xf32>) -> tensor<4x5xf32>
  %er = tensor.empty() : tensor<4xf32>
  %im = linalg.fill ins(%ninf : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %m = linalg.reduce ins(%s : tensor<4x5xf32>) outs(%im : tensor<4xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %t = arith.maximumf %a, %acc : f32
      linalg.yield %t : f32
    }
  %e = linalg.generic {indexing_maps = [#x, #r, #x], iterator_types = ["parallel", "parallel"]} ins(%s, %m : tensor<4x5xf32>, tensor<4xf32>) outs(%es : tensor<4x5xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %t = math.exp %d : f32
    linalg.yield %t : f32
  } -> tensor<4x5xf32>
  %il = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %l = linalg.reduce ins(%e : tensor<4x5xf32>) outs(%il : tensor<4xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %t = arith.addf %a, %acc : f32
      linalg.yield %t : f32
    }
  %p = linalg.generic {indexing_maps = [#x, #r, #x], iterator_types = ["parallel", "parallel"]} ins(%e, %l : tensor<4x5xf32>, tensor<4xf32>) outs(%es : tensor<4x5xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %t = arith.divf %a, %b : f32
    linalg.yield %t : f32
  } -> tensor<4x5xf32>
  %o = linalg.matmul ins(%p, %v : tensor<4x5xf32>, tensor<5x8xf32>) outs(%res : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %o : tensor<4x8xf32>
}
