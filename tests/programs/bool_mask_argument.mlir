// A softmax masked by a boolean tensor argument (tensor<...xi1>, torch.bool): masked
// scores are -inf before the softmax.
#m = affine_map<(d0, d1) -> (d0, d1)>
#r = affine_map<(d0, d1) -> (d0)>
func.func @masked_softmax(%x: tensor<6x50xf32>, %mask: tensor<6x50xi1>) -> tensor<6x50xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<6x50xf32>
  %s = linalg.generic {indexing_maps = [#m, #m, #m], iterator_types = ["parallel", "parallel"]} ins(%x, %mask : tensor<6x50xf32>, tensor<6x50xi1>) outs(%e : tensor<6x50xf32>) {
  ^bb0(%a: f32, %k: i1, %o: f32):
    %v = arith.select %k, %a, %ninf : f32
    linalg.yield %v : f32
  } -> tensor<6x50xf32>
  %y = linalg.softmax dimension(1) ins(%s : tensor<6x50xf32>) outs(%e : tensor<6x50xf32>) -> tensor<6x50xf32>
  return %y : tensor<6x50xf32>
}
