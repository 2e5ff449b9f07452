// y = gelu_tanh(x + b): bias b[N] broadcast over the rows of x[M, N], GELU 0.5*h*(1+tanh(0.7978845608*(h+0.044715*h^3)))
// tilefuse.dims: M=75 N=200
// tilefuse.dtype: f16
// tilefuse.args: x, b
func.func @bias_gelu(%x: tensor<75x200xf16>, %b: tensor<200xf16>) -> tensor<75x200xf16> {
  %half = arith.constant 0.5 : f16
  %one = arith.constant 1.0 : f16
  %c_cube = arith.constant 0.044715 : f16
  %c_sqrt_2_over_pi = arith.constant 0.7978845608 : f16
  %empty = tensor.empty() : tensor<75x200xf16>

  // h = x + b  (bias broadcast over rows through the indexing map)
  %h = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<75x200xf16>, tensor<200xf16>) outs(%empty : tensor<75x200xf16>) {
  ^bb0(%xv: f16, %bv: f16, %out: f16):
    %s = arith.addf %xv, %bv : f16
    linalg.yield %s : f16
  } -> tensor<75x200xf16>

  // u = tanh(0.7978845608 * (h + 0.044715 * h^3))
  %u = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<75x200xf16>) outs(%empty : tensor<75x200xf16>) {
  ^bb0(%hv: f16, %out: f16):
    %h2 = arith.mulf %hv, %hv : f16
    %h3 = arith.mulf %h2, %hv : f16
    %t0 = arith.mulf %h3, %c_cube : f16
    %t1 = arith.addf %hv, %t0 : f16
    %t2 = arith.mulf %t1, %c_sqrt_2_over_pi : f16
    %t3 = math.tanh %t2 : f16
    linalg.yield %t3 : f16
  } -> tensor<75x200xf16>

  // y = 0.5 * h * (1 + u)
  %y = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%h, %u : tensor<75x200xf16>, tensor<75x200xf16>) outs(%empty : tensor<75x200xf16>) {
  ^bb0(%hv: f16, %uv: f16, %out: f16):
    %p = arith.addf %uv, %one : f16
    %q = arith.mulf %hv, %half : f16
    %r = arith.mulf %q, %p : f16
    linalg.yield %r : f16
  } -> tensor<75x200xf16>

  return %y : tensor<75x200xf16>
}
