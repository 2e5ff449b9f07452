// Signless integers as MLIR reads them: cmpi ult/sge and uitofp/sitofp see the same
// bits unsigned or signed, i32/i16 arithmetic wraps, a true i1 is -1 when signed,
// xori with true is logical not, shifts.
#m = affine_map<(d0) -> (d0)>
func.func @ints(%a: tensor<8xi32>, %b: tensor<8xi32>, %k: tensor<8xi1>, %h: tensor<8xi16>) -> (tensor<8xi1>, tensor<8xi1>, tensor<8xf32>, tensor<8xf32>, tensor<8xi32>, tensor<8xi16>, tensor<8xf32>, tensor<8xi1>, tensor<8xi32>) {
  %true = arith.constant true
  %c3 = arith.constant 3 : i32
  %eb = tensor.empty() : tensor<8xi1>
  %ef = tensor.empty() : tensor<8xf32>
  %ei = tensor.empty() : tensor<8xi32>
  %eh = tensor.empty() : tensor<8xi16>
  %r:9 = linalg.generic {indexing_maps = [#m, #m, #m, #m, #m, #m, #m, #m, #m, #m, #m, #m, #m], iterator_types = ["parallel"]} ins(%a, %b, %k, %h : tensor<8xi32>, tensor<8xi32>, tensor<8xi1>, tensor<8xi16>) outs(%eb, %eb, %ef, %ef, %ei, %eh, %ef, %eb, %ei : tensor<8xi1>, tensor<8xi1>, tensor<8xf32>, tensor<8xf32>, tensor<8xi32>, tensor<8xi16>, tensor<8xf32>, tensor<8xi1>, tensor<8xi32>) {
  ^bb0(%x: i32, %y: i32, %z: i1, %w: i16, %o0: i1, %o1: i1, %o2: f32, %o3: f32, %o4: i32, %o5: i16, %o6: f32, %o7: i1, %o8: i32):
    %ult = arith.cmpi ult, %x, %y : i32
    %sge = arith.cmpi sge, %x, %y : i32
    %u = arith.uitofp %x : i32 to f32
    %s = arith.sitofp %x : i32 to f32
    %sq = arith.muli %x, %x : i32
    %hh = arith.addi %w, %w : i16
    %zs = arith.sitofp %z : i1 to f32
    %not = arith.xori %z, %true : i1
    %sh = arith.shli %x, %c3 : i32
    linalg.yield %ult, %sge, %u, %s, %sq, %hh, %zs, %not, %sh : i1, i1, f32, f32, i32, i16, f32, i1, i32
  } -> (tensor<8xi1>, tensor<8xi1>, tensor<8xf32>, tensor<8xf32>, tensor<8xi32>, tensor<8xi16>, tensor<8xf32>, tensor<8xi1>, tensor<8xi32>)
  return %r#0, %r#1, %r#2, %r#3, %r#4, %r#5, %r#6, %r#7, %r#8 : tensor<8xi1>, tensor<8xi1>, tensor<8xf32>, tensor<8xf32>, tensor<8xi32>, tensor<8xi16>, tensor<8xf32>, tensor<8xi1>, tensor<8xi32>
}
