// truncf of a payload constant (a literal, not a block): rounded like any value.
#m = affine_map<(d0) -> (d0)>
func.func @f(%x: tensor<16xf32>) -> tensor<16xf32> {
  %e = tensor.empty() : tensor<16xf32>
  %y = linalg.generic {indexing_maps = [#m, #m], iterator_types = ["parallel"]} ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %c = arith.constant 1.00390625 : f32
    %t = arith.truncf %c : f32 to bf16
    %w = arith.extf %t : bf16 to f32
    %h = arith.truncf %c : f32 to f16
    %hw = arith.extf %h : f16 to f32
    %s = arith.addf %a, %w : f32
    %s2 = arith.addf %s, %hw : f32
    linalg.yield %s2 : f32
  } -> tensor<16xf32>
  return %y : tensor<16xf32>
}
