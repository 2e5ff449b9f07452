// Upstream's linalg.matmul with explicit indexing_maps (A transposed), and a linalg.dot
// accumulating into a 0-d argument.
func.func @mm(%a: tensor<48x32xf32>, %b: tensor<48x64xf32>, %u: tensor<300xf32>, %v: tensor<300xf32>, %c: tensor<f32>) -> (tensor<32x64xf32>, tensor<f32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x64xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<32x64xf32>) -> tensor<32x64xf32>
  %m = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%a, %b : tensor<48x32xf32>, tensor<48x64xf32>) outs(%i : tensor<32x64xf32>) -> tensor<32x64xf32>
  %d = linalg.dot ins(%u, %v : tensor<300xf32>, tensor<300xf32>) outs(%c : tensor<f32>) -> tensor<f32>
  func.return %m, %d : tensor<32x64xf32>, tensor<f32>
}
