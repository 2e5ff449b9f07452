// Integer sums: the number of true entries of a boolean mask per row (extui then addi
// reductions), over a row long enough to loop (300) and one that is partial (37), and
// their ratio as a float.
#m = affine_map<(d0, d1) -> (d0, d1)>
#r = affine_map<(d0, d1) -> (d0)>
#v = affine_map<(d0) -> (d0)>
func.func @counts(%k: tensor<5x300xi1>, %x: tensor<5x37xf32>) -> (tensor<5xi32>, tensor<5xi64>, tensor<5xf32>) {
  %z32 = arith.constant 0 : i32
  %z64 = arith.constant 0 : i64
  %zf = arith.constant 0.0 : f32
  %e32 = tensor.empty() : tensor<5xi32>
  %e64 = tensor.empty() : tensor<5xi64>
  %ef = tensor.empty() : tensor<5xf32>
  %i32 = linalg.fill ins(%z32 : i32) outs(%e32 : tensor<5xi32>) -> tensor<5xi32>
  %i64 = linalg.fill ins(%z64 : i64) outs(%e64 : tensor<5xi64>) -> tensor<5xi64>
  %n = linalg.generic {indexing_maps = [#m, #r], iterator_types = ["parallel", "reduction"]} ins(%k : tensor<5x300xi1>) outs(%i32 : tensor<5xi32>) {
  ^bb0(%a: i1, %acc: i32):
    %v = arith.extui %a : i1 to i32
    %s = arith.addi %v, %acc : i32
    linalg.yield %s : i32
  } -> tensor<5xi32>
  %p = linalg.generic {indexing_maps = [#m, #r], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<5x37xf32>) outs(%i64 : tensor<5xi64>) {
  ^bb0(%a: f32, %acc: i64):
    %pos = arith.cmpf ogt, %a, %zf : f32
    %v = arith.extui %pos : i1 to i64
    %s = arith.addi %acc, %v : i64
    linalg.yield %s : i64
  } -> tensor<5xi64>
  %q = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]} ins(%n, %p : tensor<5xi32>, tensor<5xi64>) outs(%ef : tensor<5xf32>) {
  ^bb0(%a: i32, %b: i64, %o: f32):
    %fa = arith.sitofp %a : i32 to f32
    %fb = arith.sitofp %b : i64 to f32
    %d = arith.divf %fb, %fa : f32
    linalg.yield %d : f32
  } -> tensor<5xf32>
  return %n, %p, %q : tensor<5xi32>, tensor<5xi64>, tensor<5xf32>
}
