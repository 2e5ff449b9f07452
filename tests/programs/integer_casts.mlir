// Integer casts as MLIR defines them: extui zero-extends (a true i1 is 1, an i8 -1 is
// 255), extsi sign-extends (a true i1 is -1), trunci keeps the low bits (an even i32
// truncated to i1 is false), fptoui of an in-range value; torch's mask.long() is an extui.
#m = affine_map<(d0) -> (d0)>
func.func @casts(%k: tensor<8xi1>, %b: tensor<8xi8>, %w: tensor<8xi32>, %x: tensor<8xf32>) -> (tensor<8xi64>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi1>, tensor<8xi8>, tensor<8xi32>) {
  %e64 = tensor.empty() : tensor<8xi64>
  %e32 = tensor.empty() : tensor<8xi32>
  %e1 = tensor.empty() : tensor<8xi1>
  %e8 = tensor.empty() : tensor<8xi8>
  %r:7 = linalg.generic {indexing_maps = [#m, #m, #m, #m, #m, #m, #m, #m, #m, #m, #m], iterator_types = ["parallel"]} ins(%k, %b, %w, %x : tensor<8xi1>, tensor<8xi8>, tensor<8xi32>, tensor<8xf32>) outs(%e64, %e32, %e32, %e32, %e1, %e8, %e32 : tensor<8xi64>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi1>, tensor<8xi8>, tensor<8xi32>) {
  ^bb0(%a: i1, %c: i8, %d: i32, %f: f32, %o0: i64, %o1: i32, %o2: i32, %o3: i32, %o4: i1, %o5: i8, %o6: i32):
    %zk = arith.extui %a : i1 to i64
    %sk = arith.extsi %a : i1 to i32
    %zb = arith.extui %c : i8 to i32
    %sb = arith.extsi %c : i8 to i32
    %t1 = arith.trunci %d : i32 to i1
    %t8 = arith.trunci %d : i32 to i8
    %af = math.absf %f : f32
    %u = arith.fptoui %af : f32 to i32
    linalg.yield %zk, %sk, %zb, %sb, %t1, %t8, %u : i64, i32, i32, i32, i1, i8, i32
  } -> (tensor<8xi64>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi1>, tensor<8xi8>, tensor<8xi32>)
  return %r#0, %r#1, %r#2, %r#3, %r#4, %r#5, %r#6 : tensor<8xi64>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi1>, tensor<8xi8>, tensor<8xi32>
}
