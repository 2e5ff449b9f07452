// Index arithmetic on constants at function level, cast to a float scale.
#m = affine_map<(d0) -> (d0)>
func.func @ix(%x: tensor<10xf32>) -> tensor<10xf32> {
  %c1 = arith.constant 3 : index
  %c2 = arith.constant 4 : index
  %c3 = arith.addi %c1, %c2 : index
  %i = arith.index_cast %c3 : index to i64
  %f = arith.sitofp %i : i64 to f32
  %e = tensor.empty() : tensor<10xf32>
  %r = linalg.generic {indexing_maps = [#m, #m], iterator_types = ["parallel"]} ins(%x : tensor<10xf32>) outs(%e : tensor<10xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %f : f32
    linalg.yield %s : f32
  } -> tensor<10xf32>
  func.return %r : tensor<10xf32>
}
