// An unordered cmpf (ult) of a tile against a 0-d argument: the NaN tests broadcast
// (the interpreter cannot combine 0-d and n-d booleans; it crashed).
#m = affine_map<(d0, d1) -> (d0, d1)>
#r = affine_map<(d0, d1) -> ()>
func.func @f(%a: tensor<8x16xf32>, %t: tensor<f32>) -> tensor<8x16xf32> {
  %e = tensor.empty() : tensor<8x16xf32>
  %y = linalg.generic {indexing_maps = [#m, #r, #m], iterator_types = ["parallel", "parallel"]} ins(%a, %t : tensor<8x16xf32>, tensor<f32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%x: f32, %s: f32, %o: f32):
    %one = arith.constant 1.0 : f32
    %zero = arith.constant 0.0 : f32
    %p = arith.cmpf ult, %x, %s : f32
    %p1 = arith.select %p, %one, %zero : f32
    linalg.yield %p1 : f32
  } -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
