// RUN: tilefuse-opt %s -p decompose-softmax | filecheck %s

// linalg.softmax decomposes as upstream does: max (from -inf), exp(x - max),
// sum (from 0), divide; each a linalg.generic over the op's loops.
// CHECK-LABEL: func.func @softmax_op
// CHECK:       arith.constant 0xff800000 : f32
// CHECK:       %[[MAX:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x10xf32>)
// CHECK:         arith.maximumf
// CHECK:       %[[EXP:.*]] = linalg.generic {{.*}} ins(%x, %[[MAX]] : tensor<4x10xf32>, tensor<4xf32>)
// CHECK:         arith.subf
// CHECK-NEXT:    math.exp
// CHECK:       %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[EXP]] : tensor<4x10xf32>)
// CHECK:         arith.addf
// CHECK:       %[[P:.*]] = linalg.generic {{.*}} ins(%[[EXP]], %[[SUM]] : tensor<4x10xf32>, tensor<4xf32>)
// CHECK:         arith.divf
// CHECK:       func.return %[[P]]
func.func @softmax_op(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %o = tensor.empty() : tensor<4x10xf32>
  %r = linalg.softmax dimension(1) ins(%x : tensor<4x10xf32>) outs(%o : tensor<4x10xf32>) -> tensor<4x10xf32>
  func.return %r : tensor<4x10xf32>
}
