// row softmax of x[M, N]: m = max_j x, e = exp(x - m), s = sum_j e, y = e / s
// tilefuse.dims: M=70 N=333
// tilefuse.dtype: f32
// tilefuse.args: x
func.func @softmax(%x: tensor<70x333xf32>) -> tensor<70x333xf32> {
  %neg_inf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32

  // m[i] = max_j x[i, j]   (linalg.reduce, init -inf)
  %row_empty = tensor.empty() : tensor<70xf32>
  %max_init = linalg.fill ins(%neg_inf : f32) outs(%row_empty : tensor<70xf32>) -> tensor<70xf32>
  %m = linalg.reduce ins(%x : tensor<70x333xf32>) outs(%max_init : tensor<70xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %mx = arith.maximumf %in, %acc : f32
      linalg.yield %mx : f32
    }

  // e[i, j] = exp(x[i, j] - m[i])
  %empty = tensor.empty() : tensor<70x333xf32>
  %e = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : tensor<70x333xf32>, tensor<70xf32>) outs(%empty : tensor<70x333xf32>) {
  ^bb0(%xv: f32, %mv: f32, %out: f32):
    %d = arith.subf %xv, %mv : f32
    %ex = math.exp %d : f32
    linalg.yield %ex : f32
  } -> tensor<70x333xf32>

  // s[i] = sum_j e[i, j]   (generic with a reduction iterator, init 0)
  %sum_init = linalg.fill ins(%zero : f32) outs(%row_empty : tensor<70xf32>) -> tensor<70xf32>
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%e : tensor<70x333xf32>) outs(%sum_init : tensor<70xf32>) {
  ^bb0(%ev: f32, %acc: f32):
    %a = arith.addf %acc, %ev : f32
    linalg.yield %a : f32
  } -> tensor<70xf32>

  // y[i, j] = e[i, j] / s[i]
  %y = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%e, %s : tensor<70x333xf32>, tensor<70xf32>) outs(%empty : tensor<70x333xf32>) {
  ^bb0(%ev: f32, %sv: f32, %out: f32):
    %q = arith.divf %ev, %sv : f32
    linalg.yield %q : f32
  } -> tensor<70x333xf32>

  return %y : tensor<70x333xf32>
}
