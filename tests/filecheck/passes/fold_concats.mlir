// RUN: tilefuse-opt %s --split-input-file -p fold-concats | filecheck %s

// rotate_half: the upper half negated, then the lower, read by a generic. The
// concat becomes a generic over its shape that reads x itself through the
// permutation and the slices' offsets (upper half: index + 4), the negation
// inlined; the copy, the slices and the negation's generic are gone. The halves
// have one length, so each is read at the index mod 4 (in bounds in every lane,
// consecutive within each half), not clamped.
// CHECK-LABEL: func.func @rotate_half
// CHECK-NOT:   tensor.concat
// CHECK-NOT:   tensor.extract_slice
// CHECK:       %[[R:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} outs(%{{.*}} : tensor<2x3x8xf32>)
// CHECK:         %[[I:.*]] = linalg.index 0 : index
// CHECK-NEXT:    %[[J:.*]] = linalg.index 1 : index
// CHECK-NEXT:    %[[K:.*]] = linalg.index 2 : index
// CHECK-NEXT:    %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[IN:.*]] = arith.remsi %[[K]], %[[C4]] : index
// CHECK-NEXT:    %[[UP:.*]] = arith.addi %[[IN]], %[[C4]] : index
// CHECK-NEXT:    %[[A:.*]] = tensor.extract %x[%[[J]], %[[I]], %[[UP]]] : tensor<3x2x8xf32>
// CHECK-NEXT:    %[[NA:.*]] = arith.negf %[[A]] : f32
// CHECK-NEXT:    %[[B:.*]] = tensor.extract %x[%[[J]], %[[I]], %[[IN]]] : tensor<3x2x8xf32>
// CHECK-NEXT:    %[[LOW:.*]] = arith.cmpi slt, %[[K]], %[[C4]] : index
// CHECK-NEXT:    %[[S:.*]] = arith.select %[[LOW]], %[[NA]], %[[B]] : f32
// CHECK-NEXT:    linalg.yield %[[S]] : f32
// CHECK:       linalg.generic {{.*}} ins(%[[R]], %sin : tensor<2x3x8xf32>, tensor<3x8xf32>)
func.func @rotate_half(%x: tensor<3x2x8xf32>, %sin: tensor<3x8xf32>) -> tensor<2x3x8xf32> {
  %e = tensor.empty() : tensor<2x3x8xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d0, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<3x2x8xf32>) outs(%e : tensor<2x3x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<2x3x8xf32>
  %lo = tensor.extract_slice %t[0, 0, 0] [2, 3, 4] [1, 1, 1] : tensor<2x3x8xf32> to tensor<2x3x4xf32>
  %hi = tensor.extract_slice %t[0, 0, 4] [2, 3, 4] [1, 1, 1] : tensor<2x3x8xf32> to tensor<2x3x4xf32>
  %eh = tensor.empty() : tensor<2x3x4xf32>
  %n = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%hi : tensor<2x3x4xf32>) outs(%eh : tensor<2x3x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.negf %in : f32
    linalg.yield %0 : f32
  } -> tensor<2x3x4xf32>
  %r = tensor.concat dim(2) %n, %lo : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x8xf32>
  %b = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%r, %sin : tensor<2x3x8xf32>, tensor<3x8xf32>) outs(%e : tensor<2x3x8xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %0 = arith.mulf %in, %s : f32
    linalg.yield %0 : f32
  } -> tensor<2x3x8xf32>
  func.return %b : tensor<2x3x8xf32>
}

// -----

// Three pieces along dim 0: a strided slice of an argument, a generic that is
// also returned (gathered from, not inlined: it stays) and an argument. The
// middle piece's index is clamped on both sides; the selects nest from the last.
// CHECK-LABEL: func.func @three_pieces
// CHECK-NOT:   tensor.concat
// CHECK:       %[[EX:.*]] = linalg.generic
// CHECK:         math.exp
// CHECK:       linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>]
// CHECK:         %[[I:.*]] = linalg.index 0 : index
// CHECK-NEXT:    %[[J:.*]] = linalg.index 1 : index
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[I0:.*]] = arith.minsi %[[I]], %[[C1]] : index
// CHECK-NEXT:    %[[C2:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %[[R0:.*]] = arith.muli %[[I0]], %[[C2]] : index
// CHECK-NEXT:    %[[J0:.*]] = arith.muli %[[J]], %[[C2]] : index
// CHECK-NEXT:    %[[J1:.*]] = arith.addi %[[J0]], %[[C1]] : index
// CHECK-NEXT:    %[[A:.*]] = tensor.extract %s[%[[R0]], %[[J1]]] : tensor<3x8xf32>
// CHECK-NEXT:    %[[SH:.*]] = arith.subi %[[I]], %[[C2]] : index
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[LO:.*]] = arith.maxsi %[[SH]], %[[C0]] : index
// CHECK-NEXT:    %[[HI:.*]] = arith.minsi %[[LO]], %[[C2]] : index
// CHECK-NEXT:    %[[B:.*]] = tensor.extract %[[EX]][%[[HI]], %[[J]]] : tensor<3x4xf32>
// CHECK:         %[[C:.*]] = tensor.extract %c[%{{.*}}, %{{.*}}] : tensor<3x8xf32>
// CHECK-NEXT:    %[[P5:.*]] = arith.cmpi slt, %[[I]], %{{.*}} : index
// CHECK-NEXT:    %[[S5:.*]] = arith.select %[[P5]], %[[B]], %[[C]] : f32
// CHECK-NEXT:    %[[P2:.*]] = arith.cmpi slt, %[[I]], %[[C2]] : index
// CHECK-NEXT:    %[[S2:.*]] = arith.select %[[P2]], %[[A]], %[[S5]] : f32
// CHECK-NEXT:    linalg.yield %[[S2]] : f32
func.func @three_pieces(%s: tensor<3x8xf32>, %c: tensor<3x8xf32>, %d: tensor<3x4xf32>) -> (tensor<8x4xf32>, tensor<3x4xf32>) {
  %s0 = tensor.extract_slice %s[0, 1] [2, 4] [2, 2] : tensor<3x8xf32> to tensor<2x4xf32>
  %e38 = tensor.empty() : tensor<3x4xf32>
  %ex = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%d : tensor<3x4xf32>) outs(%e38 : tensor<3x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    linalg.yield %0 : f32
  } -> tensor<3x4xf32>
  %c0 = tensor.extract_slice %c[0, 4] [3, 4] [1, 1] : tensor<3x8xf32> to tensor<3x4xf32>
  %three = tensor.concat dim(0) %s0, %ex, %c0 : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<8x4xf32>
  %e = tensor.empty() : tensor<8x4xf32>
  %sq = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%three : tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %in : f32
    linalg.yield %0 : f32
  } -> tensor<8x4xf32>
  func.return %sq, %ex : tensor<8x4xf32>, tensor<3x4xf32>
}

// -----

// Refusals, each left to the host's torch.cat: a concat that is returned, and one
// read by a host op (a reshape) as well as by a generic.
// CHECK-LABEL: func.func @host_readers
// CHECK:       %[[R:.*]] = tensor.concat dim(0) %a, %b
// CHECK:       %[[V:.*]] = tensor.concat dim(0) %a, %b
// CHECK-NEXT:  tensor.collapse_shape %[[V]]
// CHECK:       func.return %[[R]]
func.func @host_readers(%a: tensor<2x4xf32>, %b: tensor<2x4xf32>) -> (tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>) {
  %r = tensor.concat dim(0) %a, %b : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  %v = tensor.concat dim(0) %a, %b : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  %f = tensor.collapse_shape %v [[0, 1]] : tensor<4x4xf32> into tensor<16xf32>
  %e = tensor.empty() : tensor<4x4xf32>
  %n = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.negf %in : f32
    linalg.yield %0 : f32
  } -> tensor<4x4xf32>
  func.return %r, %f, %n : tensor<4x4xf32>, tensor<16xf32>, tensor<4x4xf32>
}

// -----

// A dynamic dim other than the concat's (the tokens of a dynamic RoPE): the pieces
// are read as before (the slices' dynamic sizes are whole dims), the new generic's
// empty sized as the first piece was made (the argument's dim, read once), not from
// the pieces, which die.
// CHECK-LABEL: func.func @rotate_half_dynamic_tokens
// CHECK-NOT:   tensor.concat
// CHECK-NOT:   tensor.extract_slice
// CHECK:       tensor.dim %x
// CHECK:       %[[N:.*]] = tensor.dim %x, %{{.*}} : tensor<?x8xf32>
// CHECK-NEXT:  %[[E:.*]] = tensor.empty(%[[N]]) : tensor<?x8xf32>
// CHECK-NEXT:  %[[R:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%[[E]] : tensor<?x8xf32>)
// CHECK:         %[[I:.*]] = linalg.index 0 : index
// CHECK-NEXT:    %[[K:.*]] = linalg.index 1 : index
// CHECK-NEXT:    %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[IN:.*]] = arith.remsi %[[K]], %[[C4]] : index
// CHECK-NEXT:    %[[UP:.*]] = arith.addi %[[IN]], %[[C4]] : index
// CHECK-NEXT:    %[[A:.*]] = tensor.extract %x[%[[I]], %[[UP]]] : tensor<?x8xf32>
// CHECK-NEXT:    arith.negf %[[A]] : f32
// CHECK-NEXT:    tensor.extract %x[%[[I]], %[[IN]]] : tensor<?x8xf32>
// CHECK:       linalg.generic {{.*}} ins(%[[R]], %sin : tensor<?x8xf32>, tensor<?x8xf32>)
func.func @rotate_half_dynamic_tokens(%x: tensor<?x8xf32>, %sin: tensor<?x8xf32>) -> tensor<?x8xf32> attributes {tilefuse.dim_ranges = {"x.0" = [1, 4096], "sin.0" = [1, 4096]}} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %lo = tensor.extract_slice %x[0, 0] [%n, 4] [1, 1] : tensor<?x8xf32> to tensor<?x4xf32>
  %hi = tensor.extract_slice %x[0, 4] [%n, 4] [1, 1] : tensor<?x8xf32> to tensor<?x4xf32>
  %eh = tensor.empty(%n) : tensor<?x4xf32>
  %neg = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%hi : tensor<?x4xf32>) outs(%eh : tensor<?x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.negf %in : f32
    linalg.yield %0 : f32
  } -> tensor<?x4xf32>
  %r = tensor.concat dim(1) %neg, %lo : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x8xf32>
  %e = tensor.empty(%n) : tensor<?x8xf32>
  %b = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%r, %sin : tensor<?x8xf32>, tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %0 = arith.mulf %in, %s : f32
    linalg.yield %0 : f32
  } -> tensor<?x8xf32>
  func.return %b : tensor<?x8xf32>
}

// -----

// A dynamic concat dim: the pieces' starts are run-time sizes; left to the host's
// torch.cat.
// CHECK-LABEL: func.func @dynamic_concat_dim
// CHECK:       tensor.concat dim(0) %a, %b
func.func @dynamic_concat_dim(%a: tensor<?x4xf32>, %b: tensor<2x4xf32>) -> tensor<?x4xf32> attributes {tilefuse.dim_ranges = {"a.0" = [1, 4096]}} {
  %r = tensor.concat dim(0) %a, %b : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x4xf32>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %r, %c0 : tensor<?x4xf32>
  %e = tensor.empty(%n) : tensor<?x4xf32>
  %neg = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%r : tensor<?x4xf32>) outs(%e : tensor<?x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.negf %in : f32
    linalg.yield %0 : f32
  } -> tensor<?x4xf32>
  func.return %neg : tensor<?x4xf32>
}
