// MLP: y = gelu_erf(x @ W1 + b1) @ W2 + b2, gelu_erf(h) = 0.5*h*(1+erf(h/sqrt(2))); x [M, D], W1 [D, F], b1 [F], W2 [F, D], b2 [D]
// tilefuse.dims: M=45 D=96 F=200
// tilefuse.dtype: f32
// tilefuse.args: x, w1, b1, w2, b2
func.func @mlp(%x: tensor<45x96xf32>, %w1: tensor<96x200xf32>, %b1: tensor<200xf32>, %w2: tensor<200x96xf32>, %b2: tensor<96xf32>) -> tensor<45x96xf32> {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %inv_sqrt2 = arith.constant 0.7071067812 : f32

  // ---- up-projection: u = x @ W1 ----
  %hid_empty = tensor.empty() : tensor<45x200xf32>
  %u_init = linalg.fill ins(%zero : f32) outs(%hid_empty : tensor<45x200xf32>) -> tensor<45x200xf32>
  %u = linalg.matmul ins(%x, %w1 : tensor<45x96xf32>, tensor<96x200xf32>)
                     outs(%u_init : tensor<45x200xf32>) -> tensor<45x200xf32>

  // ---- bias b1 (explicit linalg.broadcast over rows) + GELU (erf form) ----
  %b1_full = linalg.broadcast ins(%b1 : tensor<200xf32>) outs(%hid_empty : tensor<45x200xf32>) dimensions = [0]
  %g = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%u, %b1_full : tensor<45x200xf32>, tensor<45x200xf32>) outs(%hid_empty : tensor<45x200xf32>) {
  ^bb0(%uv: f32, %bv: f32, %out: f32):
    %h = arith.addf %uv, %bv : f32
    %hs = arith.mulf %h, %inv_sqrt2 : f32
    %e = math.erf %hs : f32
    %e1 = arith.addf %e, %one : f32
    %hh = arith.mulf %h, %half : f32
    %r = arith.mulf %hh, %e1 : f32
    linalg.yield %r : f32
  } -> tensor<45x200xf32>

  // ---- down-projection: y = g @ W2 + b2 ----
  %out_empty = tensor.empty() : tensor<45x96xf32>
  %d_init = linalg.fill ins(%zero : f32) outs(%out_empty : tensor<45x96xf32>) -> tensor<45x96xf32>
  %d = linalg.matmul ins(%g, %w2 : tensor<45x200xf32>, tensor<200x96xf32>)
                     outs(%d_init : tensor<45x96xf32>) -> tensor<45x96xf32>
  %y = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%d, %b2 : tensor<45x96xf32>, tensor<96xf32>) outs(%out_empty : tensor<45x96xf32>) {
  ^bb0(%dv: f32, %bv: f32, %out: f32):
    %s = arith.addf %dv, %bv : f32
    linalg.yield %s : f32
  } -> tensor<45x96xf32>

  return %y : tensor<45x96xf32>
}
