// RUN: tilefuse-opt %s --split-input-file -p propagate-reshapes | filecheck %s

// A keep-dim statistic: the row sum expanded to [N, 1], divided there and
// collapsed back for its reader. The division runs on [N]: both views fold and
// the reader reads the division itself.
// CHECK-LABEL: func.func @keepdim
// CHECK-NOT:   _shape
// CHECK:       %[[S:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK:       %[[D:.*]] = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%[[S]] : tensor<8xf32>) outs(%{{.*}} : tensor<8xf32>)
// CHECK-NOT:   _shape
// CHECK:       linalg.generic {{.*}} ins(%x, %[[D]] : tensor<8x16xf32>, tensor<8xf32>)
func.func @keepdim(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 16.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<8x16xf32>) outs(%z : tensor<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %s1 = tensor.expand_shape %s [[0, 1]] output_shape [8, 1] : tensor<8xf32> into tensor<8x1xf32>
  %e1 = tensor.empty() : tensor<8x1xf32>
  %m1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%s1 : tensor<8x1xf32>) outs(%e1 : tensor<8x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.divf %a, %n : f32
    linalg.yield %r : f32
  } -> tensor<8x1xf32>
  %m = tensor.collapse_shape %m1 [[0, 1]] : tensor<8x1xf32> into tensor<8xf32>
  %e2 = tensor.empty() : tensor<8x16xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %m : tensor<8x16xf32>, tensor<8xf32>) outs(%e2 : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.subf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<8x16xf32>
  func.return %y : tensor<8x16xf32>
}

// -----

// A Linear on [B, T, C] as torch-mlir writes it: the input collapsed to [B*T, C],
// a matmul and a bias add, the result expanded back for a GELU-like op and a
// residual add with the [B, T, C] input. The elementwise ops run on [B*T, C]
// (the residual reads the same host view of the argument as the matmul: equal
// views are one); only the returned value is expanded back: nothing stands
// between the bias add and what reads it.
// CHECK-LABEL: func.func @linear
// CHECK:       %[[XC:.*]] = tensor.collapse_shape %x {{\[}}[0 : i64, 1 : i64], [2 : i64]] : tensor<2x4x8xf32> into tensor<8x8xf32>
// CHECK:       %[[MM:.*]] = linalg.generic {{.*}} ins(%[[XC]], %w : tensor<8x8xf32>, tensor<8x8xf32>)
// CHECK:       %[[B:.*]] = linalg.generic {{.*}} ins(%[[MM]], %bias : tensor<8x8xf32>, tensor<8xf32>)
// CHECK-NEXT:  ^
// CHECK-NOT:   tensor.expand_shape
// CHECK:       %[[G:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%[[B]] : tensor<8x8xf32>)
// CHECK-NOT:   tensor.collapse_shape
// CHECK:       %[[R:.*]] = linalg.generic {{.*}} ins(%[[XC]], %[[G]] : tensor<8x8xf32>, tensor<8x8xf32>)
// CHECK:       %[[OUT:.*]] = tensor.expand_shape %[[R]] {{\[}}[0 : i64, 1 : i64], [2 : i64]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
// CHECK:       func.return %[[OUT]]
func.func @linear(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>, %bias: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %xc = tensor.collapse_shape %x [[0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
  %e = tensor.empty() : tensor<8x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %mm = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%xc, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%z : tensor<8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  %bi = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%mm, %bias : tensor<8x8xf32>, tensor<8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  %y3 = tensor.expand_shape %bi [[0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
  %e3 = tensor.empty() : tensor<2x4x8xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%y3 : tensor<2x4x8xf32>) outs(%e3 : tensor<2x4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<2x4x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %g : tensor<2x4x8xf32>, tensor<2x4x8xf32>) outs(%e3 : tensor<2x4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<2x4x8xf32>
  func.return %r : tensor<2x4x8xf32>
}

// -----

// Heads: a batch matmul over B*H reading [B, H, T, D] tensors through collapses,
// its result expanded back to [B, H, T, T] for the softmax. It runs over (B, H)
// with its fill in the new shape: the collapses and the expansion fold.
// CHECK-LABEL: func.func @heads
// CHECK-NOT:   _shape
// CHECK:       %[[F:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<2x2x4x4xf32>)
// CHECK:       %[[S:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>) outs(%[[F]] : tensor<2x2x4x4xf32>)
// CHECK-NOT:   _shape
// CHECK:       linalg.generic {{.*}} ins(%[[S]] : tensor<2x2x4x4xf32>)
func.func @heads(%q: tensor<2x2x4x8xf32>, %k: tensor<2x2x4x8xf32>) -> tensor<2x2x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %qc = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x2x4x8xf32> into tensor<4x4x8xf32>
  %kc = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<2x2x4x8xf32> into tensor<4x4x8xf32>
  %e = tensor.empty() : tensor<4x4x4xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%e : tensor<4x4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<4x4x4xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%qc, %kc : tensor<4x4x8xf32>, tensor<4x4x8xf32>) outs(%z : tensor<4x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<4x4x4xf32>
  %s4 = tensor.expand_shape %s [[0, 1], [2], [3]] output_shape [2, 2, 4, 4] : tensor<4x4x4xf32> into tensor<2x2x4x4xf32>
  %e4 = tensor.empty() : tensor<2x2x4x4xf32>
  %x = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s4 : tensor<2x2x4x4xf32>) outs(%e4 : tensor<2x2x4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.exp %a : f32
    linalg.yield %t : f32
  } -> tensor<2x2x4x4xf32>
  func.return %x : tensor<2x2x4x4xf32>
}

// -----

// Stays: the heads' transpose reads the two dims the collapse merges apart
// ([B, T, H] -> [B, H, T] collapsed to [B*H, T]): no run of loops to merge in
// the transpose, and its reader also reads a [B*H, T] generic that expanding
// it would put a view before. The collapse stays a view between them: correct,
// not fused.
// CHECK-LABEL: func.func @split_run
// CHECK:       %[[T:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>]
// CHECK:       %[[C:.*]] = tensor.collapse_shape %[[T]] {{\[}}[0 : i64, 1 : i64], [2 : i64]] : tensor<2x3x4xf32> into tensor<6x4xf32>
// CHECK:       linalg.generic {{.*}} ins(%[[C]], %{{.*}} : tensor<6x4xf32>, tensor<6x4xf32>)
func.func @split_run(%x: tensor<2x4x3xf32>, %w: tensor<6x4xf32>) -> tensor<6x4xf32> {
  %e = tensor.empty() : tensor<2x3x4xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<2x4x3xf32>) outs(%e : tensor<2x3x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<2x3x4xf32>
  %c = tensor.collapse_shape %t [[0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
  %e2 = tensor.empty() : tensor<6x4xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<6x4xf32>) outs(%e2 : tensor<6x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = math.exp %a : f32
    linalg.yield %m : f32
  } -> tensor<6x4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%c, %g : tensor<6x4xf32>, tensor<6x4xf32>) outs(%e2 : tensor<6x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.addf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<6x4xf32>
  func.return %y : tensor<6x4xf32>
}

// -----

// Grouped-query attention's K: 2 KV heads broadcast to 2 x 2 query heads and
// collapsed ([B, KVH, REP] -> B*H, in two views, composed) for a batch matmul
// with Q. No collapse folds it (the broadcast reads KVH without REP), so the
// matmul and its reader run over (B, KVH, REP): the broadcast feeds the matmul
// directly (fusable, no copy of K), Q is viewed as [B, KVH, REP] (one view of
// the argument: its collapse and the expansion after compose), and the
// result as [B*H] only where it is returned. The loop index a reader asks for
// (the key position, not a split loop) follows the new loop numbering.
// CHECK-LABEL: func.func @grouped_heads
// CHECK:       %[[K:.*]] = linalg.generic {{.*}} ins(%k : tensor<1x2x4x8xf32>) outs(%{{.*}} : tensor<1x2x2x4x8xf32>)
// CHECK:       %[[Q:.*]] = tensor.expand_shape %q {{.*}} output_shape [1, 2, 2, 4, 8] : tensor<1x4x4x8xf32> into tensor<1x2x2x4x8xf32>
// CHECK:       %[[S:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d4, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4)>]{{.*}} ins(%[[Q]], %[[K]] : tensor<1x2x2x4x8xf32>, tensor<1x2x2x4x8xf32>)
// CHECK:       %[[M:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<1x2x2x4x4xf32>)
// CHECK:       linalg.index 4 : index
// CHECK:       %[[R:.*]] = tensor.collapse_shape %[[M]] {{\[}}[0 : i64, 1 : i64, 2 : i64], [3 : i64], [4 : i64]] : tensor<1x2x2x4x4xf32> into tensor<4x4x4xf32>
// CHECK-NEXT:  func.return %[[R]]
func.func @grouped_heads(%q: tensor<1x4x4x8xf32>, %k: tensor<1x2x4x8xf32>) -> tensor<4x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %eb = tensor.empty() : tensor<1x2x2x4x8xf32>
  %kb = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%k : tensor<1x2x4x8xf32>) outs(%eb : tensor<1x2x2x4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<1x2x2x4x8xf32>
  %kh = tensor.collapse_shape %kb [[0], [1, 2], [3], [4]] : tensor<1x2x2x4x8xf32> into tensor<1x4x4x8xf32>
  %kc = tensor.collapse_shape %kh [[0, 1], [2], [3]] : tensor<1x4x4x8xf32> into tensor<4x4x8xf32>
  %qc = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<1x4x4x8xf32> into tensor<4x4x8xf32>
  %e = tensor.empty() : tensor<4x4x4xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%e : tensor<4x4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<4x4x4xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%qc, %kc : tensor<4x4x8xf32>, tensor<4x4x8xf32>) outs(%z : tensor<4x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<4x4x4xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<4x4x4xf32>) outs(%e : tensor<4x4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %j = linalg.index 2 : index
    %ji = arith.index_cast %j : index to i64
    %jf = arith.sitofp %ji : i64 to f32
    %r = arith.addf %a, %jf : f32
    linalg.yield %r : f32
  } -> tensor<4x4x4xf32>
  func.return %m : tensor<4x4x4xf32>
}

// -----

// The same K, and the reader of the scores computes with the head's index
// (linalg.index 0): the heads loop splits [2, 2] all the same, the index read
// as the split loops' `i0 * 2 + i1`; the broadcast is read directly.
// CHECK-LABEL: func.func @grouped_heads_index
// CHECK:       %[[KB:.*]] = linalg.generic
// CHECK-NOT:   tensor.collapse_shape %[[KB]]
// CHECK:       ins(%{{.*}}, %[[KB]] : tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>)
// CHECK:       %[[H:.*]] = linalg.index 0 : index
// CHECK-NEXT:  %[[H1:.*]] = linalg.index 1 : index
// CHECK-NEXT:  %[[C2:.*]] = arith.constant 2 : index
// CHECK-NEXT:  %[[M:.*]] = arith.muli %[[H]], %[[C2]] : index
// CHECK-NEXT:  %[[L:.*]] = arith.addi %[[M]], %[[H1]] : index
// CHECK-NEXT:  arith.index_cast %[[L]] : index to i64
func.func @grouped_heads_index(%q: tensor<4x4x8xf32>, %k: tensor<2x4x8xf32>) -> tensor<4x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %eb = tensor.empty() : tensor<2x2x4x8xf32>
  %kb = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%k : tensor<2x4x8xf32>) outs(%eb : tensor<2x2x4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<2x2x4x8xf32>
  %kc = tensor.collapse_shape %kb [[0, 1], [2], [3]] : tensor<2x2x4x8xf32> into tensor<4x4x8xf32>
  %e = tensor.empty() : tensor<4x4x4xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%e : tensor<4x4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<4x4x4xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%q, %kc : tensor<4x4x8xf32>, tensor<4x4x8xf32>) outs(%z : tensor<4x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<4x4x4xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<4x4x4xf32>) outs(%e : tensor<4x4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %h = linalg.index 0 : index
    %hi = arith.index_cast %h : index to i64
    %hf = arith.sitofp %hi : i64 to f32
    %r = arith.addf %a, %hf : f32
    linalg.yield %r : f32
  } -> tensor<4x4x4xf32>
  func.return %m : tensor<4x4x4xf32>
}

// -----

// An `arange` (a generic of no inputs whose payload reads its loop index) is not
// a fill: at another shape its values would move (refilling it as [2, 3] made
// element [1, 0] the index 1 instead of 3). It keeps its shape; the exp and the add
// run over [6] with it (the collapse of their argument is a host view).
// CHECK-LABEL: func.func @arange_read
// CHECK:       %[[X:.*]] = tensor.collapse_shape %x {{\[}}[0 : i64, 1 : i64]] : tensor<2x3xf32> into tensor<6xf32>
// CHECK:       %[[G:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<6xf32>)
// CHECK:       %[[R:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<6xf32>)
// CHECK-NEXT:  ^
// CHECK-NEXT:    linalg.index 0 : index
// CHECK:       linalg.generic {{.*}} ins(%[[G]], %[[R]] : tensor<6xf32>, tensor<6xf32>)
// CHECK-NOT:   _shape
func.func @arange_read(%x: tensor<2x3xf32>) -> tensor<6xf32> {
  %e = tensor.empty() : tensor<2x3xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = math.exp %a : f32
    linalg.yield %m : f32
  } -> tensor<2x3xf32>
  %c = tensor.collapse_shape %g [[0, 1]] : tensor<2x3xf32> into tensor<6xf32>
  %e6 = tensor.empty() : tensor<6xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%e6 : tensor<6xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    %f = arith.sitofp %ii : i64 to f32
    linalg.yield %f : f32
  } -> tensor<6xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%c, %r : tensor<6xf32>, tensor<6xf32>) outs(%e6 : tensor<6xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<6xf32>
  func.return %y : tensor<6xf32>
}

// -----

// Stays: the reader computes with its loop index (a position along the
// expanded dims is not one loop's index once they are merged).
// CHECK-LABEL: func.func @index
// CHECK:       %[[E:.*]] = tensor.expand_shape
// CHECK:       linalg.generic {{.*}} ins(%[[E]] : tensor<2x3xf32>)
// CHECK:       linalg.index 1
func.func @index(%x: tensor<6xf32>) -> tensor<2x3xf32> {
  %ex = tensor.expand_shape %x [[0, 1]] output_shape [2, 3] : tensor<6xf32> into tensor<2x3xf32>
  %e = tensor.empty() : tensor<2x3xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%ex : tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i64
    %f = arith.sitofp %ii : i64 to f32
    %s = arith.addf %a, %f : f32
    linalg.yield %s : f32
  } -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// Stays: merging the reader's loops would merge a parallel loop with a
// reduction (a sum over the last of the expanded dims only).
// CHECK-LABEL: func.func @mixed_iterators
// CHECK:       %[[E:.*]] = tensor.expand_shape
// CHECK:       linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[E]] : tensor<2x3xf32>)
func.func @mixed_iterators(%x: tensor<6xf32>) -> tensor<2xf32> {
  %zero = arith.constant 0.0 : f32
  %ex = tensor.expand_shape %x [[0, 1]] output_shape [2, 3] : tensor<6xf32> into tensor<2x3xf32>
  %e = tensor.empty() : tensor<2xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2xf32>) -> tensor<2xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%ex : tensor<2x3xf32>) outs(%z : tensor<2xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// -----

// A 1 x 1 convolution on NCHW (as fold-unit-dims leaves it) and its ReLU: the
// output positions (oh, ow) are the innermost dims of the input and of the
// output, read by the input and not by the filter. They become one loop of
// 5 * 6 positions in both generics (the fill is made at the new shape); the
// input is viewed collapsed, the result expanded back where it is returned.
// CHECK-LABEL: func.func @conv_1x1_positions
// CHECK:       %[[X:.*]] = tensor.collapse_shape %x {{\[}}[0 : i64], [1 : i64], [2 : i64, 3 : i64]] : tensor<2x8x5x6xf32> into tensor<2x8x30xf32>
// CHECK:       %[[C:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[X]], %w : tensor<2x8x30xf32>, tensor<4x8xf32>) outs(%{{.*}} : tensor<2x4x30xf32>)
// CHECK:       %[[R:.*]] = linalg.generic {{.*}} ins(%[[C]] : tensor<2x4x30xf32>)
// CHECK:       %[[E:.*]] = tensor.expand_shape %[[R]] {{\[}}[0 : i64], [1 : i64], [2 : i64, 3 : i64]] output_shape [2, 4, 5, 6] : tensor<2x4x30xf32> into tensor<2x4x5x6xf32>
// CHECK:       func.return %[[E]]
func.func @conv_1x1_positions(%x: tensor<2x8x5x6xf32>, %w: tensor<4x8xf32>) -> tensor<2x4x5x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x5x6xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x5x6xf32>) -> tensor<2x4x5x6xf32>
  %c = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d2, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%x, %w : tensor<2x8x5x6xf32>, tensor<4x8xf32>) outs(%z : tensor<2x4x5x6xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x4x5x6xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c : tensor<2x4x5x6xf32>) outs(%e : tensor<2x4x5x6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %y = arith.maximumf %a, %zero : f32
    linalg.yield %y : f32
  } -> tensor<2x4x5x6xf32>
  func.return %r : tensor<2x4x5x6xf32>
}

// -----

// A 1 x 1 convolution reading a 3 x 3 one's result: the 3 x 3 reads its input
// through a window (oh + kh), so it stays as it is; the 1 x 1 still merges its
// positions, reading a collapsed view of the 3 x 3's result (a kernel boundary:
// a contraction's operand comes from another kernel). The filters' shared fill
// is no link between the two.
// CHECK-LABEL: func.func @conv_3x3_then_1x1
// CHECK:       %[[T:.*]] = linalg.generic {{.*}} ins(%x, %w3 : tensor<2x8x7x8xf32>, tensor<8x8x3x3xf32>) outs(%{{.*}} : tensor<2x8x5x6xf32>)
// CHECK:       %[[V:.*]] = tensor.collapse_shape %[[T]] {{\[}}[0 : i64], [1 : i64], [2 : i64, 3 : i64]] : tensor<2x8x5x6xf32> into tensor<2x8x30xf32>
// CHECK:       linalg.generic {{.*}} ins(%[[V]], %w1 : tensor<2x8x30xf32>, tensor<8x8xf32>) outs(%{{.*}} : tensor<2x8x30xf32>)
func.func @conv_3x3_then_1x1(%x: tensor<2x8x7x8xf32>, %w3: tensor<8x8x3x3xf32>, %w1: tensor<8x8xf32>) -> tensor<2x8x5x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x8x5x6xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8x5x6xf32>) -> tensor<2x8x5x6xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w3 : tensor<2x8x7x8xf32>, tensor<8x8x3x3xf32>) outs(%z : tensor<2x8x5x6xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x8x5x6xf32>
  %c = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d2, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%t, %w1 : tensor<2x8x5x6xf32>, tensor<8x8xf32>) outs(%z : tensor<2x8x5x6xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x8x5x6xf32>
  func.return %c : tensor<2x8x5x6xf32>
}

// -----

// Stays: the query positions and heads of a batched product are one side of it
// but not its innermost dims (the head dim and the keys are): attention's
// products are left as they are.
// CHECK-LABEL: func.func @heads_and_positions
// CHECK:       linalg.generic {{.*}} ins(%q, %k : tensor<2x3x4x8xf32>, tensor<2x5x8xf32>) outs(%{{.*}} : tensor<2x3x4x5xf32>)
func.func @heads_and_positions(%q: tensor<2x3x4x8xf32>, %k: tensor<2x5x8xf32>) -> tensor<2x3x4x5xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3x4x5xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3x4x5xf32>) -> tensor<2x3x4x5xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<2x3x4x8xf32>, tensor<2x5x8xf32>) outs(%z : tensor<2x3x4x5xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %t = arith.addf %o, %m : f32
    linalg.yield %t : f32
  } -> tensor<2x3x4x5xf32>
  func.return %s : tensor<2x3x4x5xf32>
}

// -----

// A collapse and an expansion after it that together only drop a unit dim (the
// merge of B and H around a head slice's unit dim, `1xBxHxTxD -> B*H -> BxH`)
// compose into that one collapse of the source; an expansion and a collapse after
// it that are one collapse of the source the same.
// CHECK-LABEL: func.func @mixed_views
// CHECK:       %[[A:.*]] = tensor.collapse_shape %x {{\[}}[0 : i64, 1 : i64], [2 : i64], [3 : i64]] : tensor<1x2x3x4xf32> into tensor<2x3x4xf32>
// CHECK:       %[[B:.*]] = tensor.collapse_shape %y {{\[}}[0 : i64, 1 : i64], [2 : i64]] : tensor<2x3x4xf32> into tensor<6x4xf32>
// CHECK:       func.return %[[A]], %[[B]]
func.func @mixed_views(%x: tensor<1x2x3x4xf32>, %y: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<6x4xf32>) {
  %c = tensor.collapse_shape %x [[0, 1, 2], [3]] : tensor<1x2x3x4xf32> into tensor<6x4xf32>
  %e = tensor.expand_shape %c [[0, 1], [2]] output_shape [2, 3, 4] : tensor<6x4xf32> into tensor<2x3x4xf32>
  %u = tensor.expand_shape %y [[0, 1], [2], [3]] output_shape [1, 2, 3, 4] : tensor<2x3x4xf32> into tensor<1x2x3x4xf32>
  %v = tensor.collapse_shape %u [[0, 1, 2], [3]] : tensor<1x2x3x4xf32> into tensor<6x4xf32>
  func.return %e, %v : tensor<2x3x4xf32>, tensor<6x4xf32>
}
