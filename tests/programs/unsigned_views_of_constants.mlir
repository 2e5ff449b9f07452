// Unsigned compares and conversions of i16/i1 payload constants (bitcast at their own
// width; a Python number has no .to).
#m = affine_map<(d0) -> (d0)>
func.func @f(%a: tensor<8xi16>) -> (tensor<8xi1>, tensor<8xf32>) {
  %c = arith.constant 5 : i16
  %eb = tensor.empty() : tensor<8xi1>
  %ef = tensor.empty() : tensor<8xf32>
  %r:2 = linalg.generic {indexing_maps = [#m, #m, #m], iterator_types = ["parallel"]} ins(%a : tensor<8xi16>) outs(%eb, %ef : tensor<8xi1>, tensor<8xf32>) {
  ^bb0(%x: i16, %o: i1, %o2: f32):
    %u = arith.cmpi ult, %x, %c : i16
    %t = arith.constant true
    %f = arith.uitofp %c : i16 to f32
    %g = arith.sitofp %t : i1 to f32
    %s = arith.addf %f, %g : f32
    linalg.yield %u, %s : i1, f32
  } -> (tensor<8xi1>, tensor<8xf32>)
  return %r#0, %r#1 : tensor<8xi1>, tensor<8xf32>
}
