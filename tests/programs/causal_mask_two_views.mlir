// SDPA's is_causal mask as torch-mlir exports it: one `arange`, viewed as a
// row (1x77) and as a column (77x1), compared, and the scores masked before a
// softmax. After fold-unit-dims one op reads the arange along two loops
// (j and i): tile-and-fuse computes it once per read.
#map = affine_map<(d0) -> (d0)>
#row = affine_map<(d0, d1) -> (0, d1)>
#col = affine_map<(d0, d1) -> (d0, 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0)>
func.func @causal(%scores: tensor<77x77xf32>) -> tensor<77x77xf32> {
  %c0 = arith.constant 0 : i64
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<77xi64>
  %arange = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel"]} outs(%e : tensor<77xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<77xi64>
  %r = tensor.expand_shape %arange [[0, 1]] output_shape [1, 77] : tensor<77xi64> into tensor<1x77xi64>
  %c = tensor.expand_shape %arange [[0, 1]] output_shape [77, 1] : tensor<77xi64> into tensor<77x1xi64>
  %e2 = tensor.empty() : tensor<77x77xi64>
  %diff = linalg.generic {indexing_maps = [#row, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%r, %c : tensor<1x77xi64>, tensor<77x1xi64>) outs(%e2 : tensor<77x77xi64>) {
  ^bb0(%in: i64, %in2: i64, %out: i64):
    %x = arith.subi %in, %in2 : i64
    linalg.yield %x : i64
  } -> tensor<77x77xi64>
  %e3 = tensor.empty() : tensor<77x77xf32>
  %masked = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%diff, %scores : tensor<77x77xi64>, tensor<77x77xf32>) outs(%e3 : tensor<77x77xf32>) {
  ^bb0(%in: i64, %v: f32, %out: f32):
    %k = arith.cmpi sle, %in, %c0 : i64
    %y = arith.select %k, %v, %ninf : f32
    linalg.yield %y : f32
  } -> tensor<77x77xf32>
  %sm = linalg.softmax dimension(1) ins(%masked : tensor<77x77xf32>) outs(%e3 : tensor<77x77xf32>) -> tensor<77x77xf32>
  return %sm : tensor<77x77xf32>
}
