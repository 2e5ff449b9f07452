// torch-mlir's scalar operands: tensor.extract of a 0-d tensor at function level,
// read inside two generics' payloads (an elementwise op and a reduction); each
// reads the 0-d tensor as an input.
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @sc(%x: tensor<4x5xf32>, %s: tensor<f32>) -> (tensor<4x5xf32>, tensor<4xf32>) {
  %v = tensor.extract %s[] : tensor<f32>
  %c = arith.constant dense<2.000000e+00> : tensor<4x5xf32>
  %e = tensor.empty() : tensor<4x5xf32>
  %y = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%x, %c : tensor<4x5xf32>, tensor<4x5xf32>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %v : f32
    %r = arith.addf %m, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x5xf32>
  %z = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e2 : tensor<4xf32>) -> tensor<4xf32>
  %t = linalg.generic {indexing_maps = [#map, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x5xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.mulf %a, %v : f32
    %r = arith.addf %m, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %y, %t : tensor<4x5xf32>, tensor<4xf32>
}
