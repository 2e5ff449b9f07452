// Several results of one linalg.generic, printed as upstream does: -> (t1, t2).
// log of a max of normals is NaN where both are negative, in the reference too.
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @mo(%x: tensor<40x60xf32>, %y: tensor<40x60xf32>) -> (tensor<40x60xf32>, tensor<40x60xf32>) {
  %e = tensor.empty() : tensor<40x60xf32>
  %r:2 = linalg.generic {indexing_maps = [#map, #map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<40x60xf32>, tensor<40x60xf32>) outs(%e, %e : tensor<40x60xf32>, tensor<40x60xf32>) {
  ^bb0(%a: f32, %b: f32, %o1: f32, %o2: f32):
    %s = arith.addf %a, %b : f32
    %m = arith.maximumf %a, %b : f32
    %l = math.log %m : f32
    linalg.yield %s, %l : f32, f32
  } -> (tensor<40x60xf32>, tensor<40x60xf32>)
  func.return %r#0, %r#1 : tensor<40x60xf32>, tensor<40x60xf32>
}
