// y = relu(x @ W + b): x [M, K], W [K, N], b [N]; linalg.matmul then one generic for bias + relu
// tilefuse.dims: M=100 K=96 N=80
// tilefuse.dtype: f32
// tilefuse.args: x, w, b
func.func @linear_bias_relu(%x: tensor<100x96xf32>, %w: tensor<96x80xf32>, %b: tensor<80xf32>) -> tensor<100x80xf32> {
  %zero = arith.constant 0.0 : f32

  // acc = x @ W
  %empty = tensor.empty() : tensor<100x80xf32>
  %acc_init = linalg.fill ins(%zero : f32) outs(%empty : tensor<100x80xf32>) -> tensor<100x80xf32>
  %acc = linalg.matmul ins(%x, %w : tensor<100x96xf32>, tensor<96x80xf32>)
                       outs(%acc_init : tensor<100x80xf32>) -> tensor<100x80xf32>

  // y = max(acc + b, 0)
  %y = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%acc, %b : tensor<100x80xf32>, tensor<80xf32>) outs(%empty : tensor<100x80xf32>) {
  ^bb0(%av: f32, %bv: f32, %out: f32):
    %s = arith.addf %av, %bv : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<100x80xf32>

  return %y : tensor<100x80xf32>
}
