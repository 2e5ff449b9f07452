// torch.matmul of a bf16 batch by a bf16 weight, spelled as torch-mlir spells a
// broadcast batch matmul in f32: the weight broadcast over the batch, both operands
// widened by extf producers, an f32 batch_matmul. The broadcast and the widenings
// fold into the contraction: one kernel, a bf16 tl.dot over (batch x rows) x cols.
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#bcast = affine_map<(d0, d1, d2) -> (d1, d2)>
func.func @main(%x: tensor<2x24x32xbf16>, %w: tensor<32x40xbf16>) -> tensor<2x24x40xbf16> {
  %zero = arith.constant 0.0 : f32
  %eb = tensor.empty() : tensor<2x32x40xbf16>
  %wb = linalg.generic {indexing_maps = [#bcast, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%w : tensor<32x40xbf16>) outs(%eb : tensor<2x32x40xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    linalg.yield %in : bf16
  } -> tensor<2x32x40xbf16>
  %ew = tensor.empty() : tensor<2x32x40xf32>
  %wf = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%wb : tensor<2x32x40xbf16>) outs(%ew : tensor<2x32x40xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
  } -> tensor<2x32x40xf32>
  %ex = tensor.empty() : tensor<2x24x32xf32>
  %xf = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<2x24x32xbf16>) outs(%ex : tensor<2x24x32xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
  } -> tensor<2x24x32xf32>
  %e = tensor.empty() : tensor<2x24x40xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<2x24x40xf32>) -> tensor<2x24x40xf32>
  %y = linalg.batch_matmul ins(%xf, %wf : tensor<2x24x32xf32>, tensor<2x32x40xf32>) outs(%i : tensor<2x24x40xf32>) -> tensor<2x24x40xf32>
  %eo = tensor.empty() : tensor<2x24x40xbf16>
  %o = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%y : tensor<2x24x40xf32>) outs(%eo : tensor<2x24x40xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %0 = arith.truncf %in : f32 to bf16
    linalg.yield %0 : bf16
  } -> tensor<2x24x40xbf16>
  func.return %o : tensor<2x24x40xbf16>
}
