// RUN: tilefuse-opt %s -p linalg-generalize | filecheck %s

// CHECK-LABEL: func.func @named_ops
// CHECK-NOT: linalg.fill
// CHECK-NOT: linalg.matmul
// CHECK-NOT: linalg.reduce
// CHECK-NOT: linalg.transpose
// CHECK-NOT: linalg.broadcast
func.func @named_ops(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>, %v: tensor<6xf32>) -> (tensor<4x6xf32>, tensor<4xf32>, tensor<8x4xf32>, tensor<4x6xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x6xf32>
  // CHECK: %[[F:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%{{.*}} : f32)
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  // CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8x6xf32>) outs(%[[F]] : tensor<4x6xf32>)
  // CHECK: arith.mulf
  // CHECK: arith.addf
  %m = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x6xf32>) outs(%f : tensor<4x6xf32>) -> tensor<4x6xf32>
  %e4 = tensor.empty() : tensor<4xf32>
  %f4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  // CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
  %r = linalg.reduce ins(%a : tensor<4x8xf32>) outs(%f4 : tensor<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %et = tensor.empty() : tensor<8x4xf32>
  // CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
  %t = linalg.transpose ins(%a : tensor<4x8xf32>) outs(%et : tensor<8x4xf32>) permutation = [1, 0]
  // CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
  %bc = linalg.broadcast ins(%v : tensor<6xf32>) outs(%e : tensor<4x6xf32>) dimensions = [0]
  func.return %m, %r, %t, %bc : tensor<4x6xf32>, tensor<4xf32>, tensor<8x4xf32>, tensor<4x6xf32>
}

// -----

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
