// z = relu(x + y), elementwise over a [M, N] matrix, one linalg.generic
// tilefuse.dims: M=37 N=300
// tilefuse.dtype: f32
// tilefuse.args: x, y
func.func @relu_add(%x: tensor<37x300xf32>, %y: tensor<37x300xf32>) -> tensor<37x300xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<37x300xf32>
  %z = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<37x300xf32>, tensor<37x300xf32>)
      outs(%empty : tensor<37x300xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %sum = arith.addf %a, %b : f32
    %relu = arith.maximumf %sum, %zero : f32
    linalg.yield %relu : f32
  } -> tensor<37x300xf32>
  return %z : tensor<37x300xf32>
}
