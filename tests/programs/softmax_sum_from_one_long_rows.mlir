// Softmax with a denominator of 1 + sum exp(x - max) over 70001-wide rows (online
// softmax): a sum that starts from 1 is not rescaled like the running terms, so the
// online form is not used for it.
#x = affine_map<(d0, d1) -> (d0, d1)>
#r = affine_map<(d0, d1) -> (d0)>
func.func @f(%x: tensor<1x70001xf32>) -> tensor<1x70001xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %one = arith.constant 1.0 : f32
  %e1 = tensor.empty() : tensor<1xf32>
  %im = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<1xf32>) -> tensor<1xf32>
  %m = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<1x70001xf32>) outs(%im : tensor<1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<1xf32>
  %e = tensor.empty() : tensor<1x70001xf32>
  %ex = linalg.generic {indexing_maps = [#x, #r, #x], iterator_types = ["parallel", "parallel"]} ins(%x, %m : tensor<1x70001xf32>, tensor<1xf32>) outs(%e : tensor<1x70001xf32>) {
  ^bb0(%a: f32, %mm: f32, %o: f32):
    %d = arith.subf %a, %mm : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<1x70001xf32>
  %is = linalg.fill ins(%one : f32) outs(%e1 : tensor<1xf32>) -> tensor<1xf32>
  %s = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]} ins(%ex : tensor<1x70001xf32>) outs(%is : tensor<1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<1xf32>
  %y = linalg.generic {indexing_maps = [#x, #r, #x], iterator_types = ["parallel", "parallel"]} ins(%ex, %s : tensor<1x70001xf32>, tensor<1xf32>) outs(%e : tensor<1x70001xf32>) {
  ^bb0(%a: f32, %t: f32, %o: f32):
    %r = arith.divf %a, %t : f32
    linalg.yield %r : f32
  } -> tensor<1x70001xf32>
  func.return %y : tensor<1x70001xf32>
}
