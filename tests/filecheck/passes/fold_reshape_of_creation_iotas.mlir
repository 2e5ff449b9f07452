// RUN: tilefuse-opt %s -p "fold-reshape-of-creation{iotas=true}" | filecheck %s

// An `arange` (a generic of no inputs reading its loop index) viewed: computed in
// the viewed shape, each old index from the new ones. Expanded [6] -> [2, 3]: the
// index is i0 * 3 + i1; collapsed [2, 3] -> [6] (an iota of i * 10 + j): i is
// k // 3 (the outermost: no remainder), j is (k // 1) % 3, no division by 1.
// CHECK-LABEL: func.func @iotas
// CHECK-NOT:   tensor.expand_shape
// CHECK-NOT:   tensor.collapse_shape
// CHECK:       linalg.generic {{.*}} outs(%{{.*}} : tensor<2x3xi64>)
// CHECK:         %[[I0:.*]] = linalg.index 0 : index
// CHECK-NEXT:    %[[I1:.*]] = linalg.index 1 : index
// CHECK-NEXT:    %[[C3:.*]] = arith.constant 3 : index
// CHECK-NEXT:    %[[M:.*]] = arith.muli %[[I0]], %[[C3]] : index
// CHECK-NEXT:    %[[L:.*]] = arith.addi %[[M]], %[[I1]] : index
// CHECK-NEXT:    arith.index_cast %[[L]] : index to i64
// CHECK:       linalg.generic {{.*}} outs(%{{.*}} : tensor<6xi64>)
// CHECK:         %[[K:.*]] = linalg.index 0 : index
// CHECK-NEXT:    %[[C:.*]] = arith.constant 3 : index
// CHECK-NEXT:    %[[I:.*]] = arith.divui %[[K]], %[[C]] : index
// CHECK:         %[[K2:.*]] = linalg.index 0 : index
// CHECK-NEXT:    %[[C2:.*]] = arith.constant 3 : index
// CHECK-NEXT:    %[[J:.*]] = arith.remui %[[K2]], %[[C2]] : index
func.func @iotas() -> (tensor<2x3xi64>, tensor<6xi64>) {
  %e = tensor.empty() : tensor<6xi64>
  %a = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%e : tensor<6xi64>) {
  ^bb0(%o: i64):
    %i = linalg.index 0 : index
    %v = arith.index_cast %i : index to i64
    linalg.yield %v : i64
  } -> tensor<6xi64>
  %x = tensor.expand_shape %a [[0, 1]] output_shape [2, 3] : tensor<6xi64> into tensor<2x3xi64>
  %e2 = tensor.empty() : tensor<2x3xi64>
  %b = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%e2 : tensor<2x3xi64>) {
  ^bb0(%o: i64):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %ten = arith.constant 10 : index
    %t = arith.muli %i, %ten : index
    %s = arith.addi %t, %j : index
    %v = arith.index_cast %s : index to i64
    linalg.yield %v : i64
  } -> tensor<2x3xi64>
  %c = tensor.collapse_shape %b [[0, 1]] : tensor<2x3xi64> into tensor<6xi64>
  func.return %x, %c : tensor<2x3xi64>, tensor<6xi64>
}
