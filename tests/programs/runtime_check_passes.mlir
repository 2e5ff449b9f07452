// A runtime check (cf.assert, as torch-mlir writes for an index out of range)
// that holds: `idx < 10` and `idx >= 0` on every element of a computed index,
// then arithmetic it guards; 7 x 33 elements, so edge tiles hold lanes past the
// end (their zero padding must not fail `x != 0`, torch-mlir's reciprocal check).
#m = affine_map<(d0, d1) -> (d0, d1)>
func.func @checked(%x: tensor<7x33xf32>) -> tensor<7x33xf32> {
  %c10 = arith.constant 10 : index
  %c0 = arith.constant 0 : i64
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<7x33xf32>
  %r = linalg.generic {indexing_maps = [#m, #m], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<7x33xf32>) outs(%e : tensor<7x33xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = math.absf %in : f32
    %f = math.floor %a : f32
    %i = arith.fptosi %f : f32 to i64
    %idx = arith.index_cast %i : i64 to index
    %lt = arith.cmpi slt, %idx, %c10 : index
    cf.assert %lt, "index must be smaller than dim size"
    %ge = arith.cmpi sge, %i, %c0 : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %p = arith.addf %a, %one : f32
    %nz = arith.cmpf one, %p, %zero : f32
    cf.assert %nz, "unimplemented: tensor with zero element"
    %inv = arith.divf %one, %p : f32
    %fi = arith.sitofp %i : i64 to f32
    %y = arith.addf %inv, %fi : f32
    linalg.yield %y : f32
  } -> tensor<7x33xf32>
  func.return %r : tensor<7x33xf32>
}
