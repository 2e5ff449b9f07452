// Integer and boolean tensors as arguments and results (torch.int32, torch.bool): an
// integer scale read, truncated products and a comparison returned.
#m = affine_map<(d0, d1) -> (d0, d1)>
func.func @ints(%x: tensor<5x40xf32>, %n: tensor<5x40xi32>) -> (tensor<5x40xf32>, tensor<5x40xi32>, tensor<5x40xi1>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x40xf32>
  %ei = tensor.empty() : tensor<5x40xi32>
  %eb = tensor.empty() : tensor<5x40xi1>
  %r:3 = linalg.generic {indexing_maps = [#m, #m, #m, #m, #m], iterator_types = ["parallel", "parallel"]} ins(%x, %n : tensor<5x40xf32>, tensor<5x40xi32>) outs(%e, %ei, %eb : tensor<5x40xf32>, tensor<5x40xi32>, tensor<5x40xi1>) {
  ^bb0(%a: f32, %k: i32, %o: f32, %oi: i32, %ob: i1):
    %f = arith.sitofp %k : i32 to f32
    %s = arith.mulf %a, %f : f32
    %t = arith.fptosi %s : f32 to i32
    %pos = arith.cmpf ogt, %s, %zero : f32
    linalg.yield %s, %t, %pos : f32, i32, i1
  } -> (tensor<5x40xf32>, tensor<5x40xi32>, tensor<5x40xi1>)
  return %r#0, %r#1, %r#2 : tensor<5x40xf32>, tensor<5x40xi32>, tensor<5x40xi1>
}
