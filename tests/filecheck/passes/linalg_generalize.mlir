// RUN: tilefuse-opt %s --split-input-file -p linalg-generalize | filecheck %s

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

// A convolution becomes the generic reading its input through the window
// (`oh * 2 + kh * 3`); viewing it is `fold-windows`'s job.
// CHECK-LABEL: func.func @conv
// CHECK:       linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, ((d1 * 2) + (d4 * 3)), ((d2 * 2) + (d5 * 3)), d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d3)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x20x20x4xf32>, tensor<3x3x4x8xf32>)
// CHECK-NOT:   tilefuse.window
func.func @conv(%x: tensor<1x20x20x4xf32>, %w: tensor<3x3x4x8xf32>, %o: tensor<1x7x7x8xf32>) -> tensor<1x7x7x8xf32> {
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<3> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%x, %w : tensor<1x20x20x4xf32>, tensor<3x3x4x8xf32>) outs(%o : tensor<1x7x7x8xf32>) -> tensor<1x7x7x8xf32>
  func.return %r : tensor<1x7x7x8xf32>
}
