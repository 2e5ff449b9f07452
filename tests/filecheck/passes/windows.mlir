// RUN: tilefuse-opt %s --split-input-file -p 'linalg-generalize' | filecheck %s

// A strided, dilated convolution's input read (oh * 2 + kh * 3) becomes a
// window view of x, read through the projection on the view's dims
// (n, oh, kh, ow, kw, c: first-seen order).
// CHECK-LABEL: func.func @conv
// CHECK:      %[[P:.*]] = tilefuse.window %x affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, ((d1 * 2) + (d2 * 3)), ((d3 * 2) + (d4 * 3)), d5)> : tensor<1x20x20x4xf32> -> tensor<1x7x3x7x3x4xf32>
// CHECK:      linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d4, d2, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d3)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>]
// CHECK-SAME: ins(%[[P]], %w : tensor<1x7x3x7x3x4xf32>, tensor<3x3x4x8xf32>)
func.func @conv(%x: tensor<1x20x20x4xf32>, %w: tensor<3x3x4x8xf32>, %o: tensor<1x7x7x8xf32>) -> tensor<1x7x7x8xf32> {
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<3> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%x, %w : tensor<1x20x20x4xf32>, tensor<3x3x4x8xf32>) outs(%o : tensor<1x7x7x8xf32>) -> tensor<1x7x7x8xf32>
  func.return %r : tensor<1x7x7x8xf32>
}

// -----

// Max pooling: max(out, in) (upstream's payload), and the window-shape operand,
// which the payload never reads, leaves once the view bounds its loops.
// CHECK-LABEL: func.func @pool
// CHECK:      %[[P:.*]] = tilefuse.window %x affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, ((d2 * 2) + d3), ((d4 * 2) + d5))> : tensor<1x3x8x8xf32> -> tensor<1x3x4x2x4x2xf32>
// CHECK:      linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d4, d3, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>]
// CHECK-SAME: ins(%[[P]] : tensor<1x3x4x2x4x2xf32>) outs(%o : tensor<1x3x4x4xf32>)
// CHECK-NEXT: ^{{.*}}(%[[IN:.*]]: f32, %[[OUT:.*]]: f32):
// CHECK-NEXT:   arith.maximumf %[[OUT]], %[[IN]] : f32
func.func @pool(%x: tensor<1x3x8x8xf32>, %o: tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32> {
  %k = tensor.empty() : tensor<2x2xf32>
  %r = linalg.pooling_nchw_max {strides = dense<2> : tensor<2xi64>} ins(%x, %k : tensor<1x3x8x8xf32>, tensor<2x2xf32>) outs(%o : tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  func.return %r : tensor<1x3x4x4xf32>
}

// -----

// A generic's projected reads are left alone; a diagonal read x[i, i] is a
// window too (one view dim stepping both strides).
// CHECK-LABEL: func.func @diagonal
// CHECK:      %[[D:.*]] = tilefuse.window %x affine_map<(d0) -> (d0, d0)> : tensor<5x5xf32> -> tensor<5xf32>
// CHECK:      ins(%[[D]], %y : tensor<5xf32>, tensor<5xf32>)
func.func @diagonal(%x: tensor<5x5xf32>, %y: tensor<5xf32>, %o: tensor<5xf32>) -> tensor<5xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i, i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%x, %y : tensor<5x5xf32>, tensor<5xf32>) outs(%o : tensor<5xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<5xf32>
  func.return %r : tensor<5xf32>
}
