// random tensor program (tilefuse.testing.random_programs)
// tilefuse.dims: M=2 N=3
// tilefuse.dtype: f32
// tilefuse.args: a0
func.func @random(%a0: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<2xf32>
  %e1 = tensor.empty() : tensor<2x2xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2xf32>) -> tensor<2xf32>
  %v0 = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>,
                       affine_map<(d0, d1) -> (d0)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%a0 : tensor<2x2xf32>) outs(%f0 : tensor<2xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %t0 = arith.addf %in, %acc : f32
    linalg.yield %t0 : f32
  } -> tensor<2xf32>
  %v1 = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%v0 : tensor<2xf32>) outs(%e1 : tensor<2x2xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<2x2xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x2xf32>) -> tensor<2x2xf32>
  %v2 = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                       affine_map<(d0, d1, d2) -> (d1, d2)>,
                       affine_map<(d0, d1, d2) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a0, %v1 : tensor<2x2xf32>, tensor<2x2xf32>) outs(%f1 : tensor<2x2xf32>) {
  ^bb0(%in0: f32, %in1: f32, %acc: f32):
    %t0 = arith.mulf %in0, %in1 : f32
    %t1 = arith.addf %t0, %acc : f32
    linalg.yield %t1 : f32
  } -> tensor<2x2xf32>
  return %v2 : tensor<2x2xf32>
}
