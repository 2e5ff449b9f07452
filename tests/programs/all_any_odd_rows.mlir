// torch's (x > 0).all(-1), (x > 1).any(-1) and a parity (xori) of rows of 37,
// one partial tile each, as torch-mlir spells them: andi/ori/xori of i1 from
// true/false; and an andi of i32 from all ones.
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
func.func @all_any(%x: tensor<5x37xf32>, %k: tensor<5x37xi32>) -> (tensor<5xi1>, tensor<5xi1>, tensor<5xi1>, tensor<5xi32>) {
  %true = arith.constant true
  %false = arith.constant false
  %ones = arith.constant -1 : i32
  %zero = arith.constant -1.5 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<5x37xi1>
  %pos = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<5x37xf32>) outs(%e : tensor<5x37xi1>) {
  ^bb0(%in: f32, %out: i1):
    %c = arith.cmpf ogt, %in, %zero : f32
    linalg.yield %c : i1
  } -> tensor<5x37xi1>
  %big = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<5x37xf32>) outs(%e : tensor<5x37xi1>) {
  ^bb0(%in: f32, %out: i1):
    %c = arith.cmpf ogt, %in, %one : f32
    linalg.yield %c : i1
  } -> tensor<5x37xi1>
  %eb = tensor.empty() : tensor<5xi1>
  %t = linalg.fill ins(%true : i1) outs(%eb : tensor<5xi1>) -> tensor<5xi1>
  %f = linalg.fill ins(%false : i1) outs(%eb : tensor<5xi1>) -> tensor<5xi1>
  %all = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%pos : tensor<5x37xi1>) outs(%t : tensor<5xi1>) {
  ^bb0(%in: i1, %out: i1):
    %a = arith.andi %in, %out : i1
    linalg.yield %a : i1
  } -> tensor<5xi1>
  %any = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%big : tensor<5x37xi1>) outs(%f : tensor<5xi1>) {
  ^bb0(%in: i1, %out: i1):
    %o = arith.ori %in, %out : i1
    linalg.yield %o : i1
  } -> tensor<5xi1>
  %par = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%big : tensor<5x37xi1>) outs(%f : tensor<5xi1>) {
  ^bb0(%in: i1, %out: i1):
    %o = arith.xori %in, %out : i1
    linalg.yield %o : i1
  } -> tensor<5xi1>
  %ei = tensor.empty() : tensor<5xi32>
  %o = linalg.fill ins(%ones : i32) outs(%ei : tensor<5xi32>) -> tensor<5xi32>
  %and = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%k : tensor<5x37xi32>) outs(%o : tensor<5xi32>) {
  ^bb0(%in: i32, %out: i32):
    %a = arith.andi %in, %out : i32
    linalg.yield %a : i32
  } -> tensor<5xi32>
  func.return %all, %any, %par, %and : tensor<5xi1>, tensor<5xi1>, tensor<5xi1>, tensor<5xi32>
}
