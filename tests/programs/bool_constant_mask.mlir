// A boolean tensor constant (dense<[[true, false, ...]]> : tensor<3x4xi1>) selecting
// elements: built on the host as a torch.bool tensor.
func.func @f(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %t = arith.constant dense<[[true, false, true, true], [true, true, false, true], [false, false, true, true]]> : tensor<3x4xi1>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x4xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %t : tensor<3x4xf32>, tensor<3x4xi1>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%in: f32, %c: i1, %o: f32):
    %r = arith.select %c, %in, %z : f32
    linalg.yield %r : f32
  } -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}