// RUN: tilefuse-opt %s --split-input-file -p fold-windows | filecheck %s

// A strided, dilated convolution's input read (oh * 2 + kh * 3) becomes a
// window view of x, read through the projection on the view's dims
// (n, oh, kh, ow, kw, c: first-seen order).
// CHECK-LABEL: func.func @conv
// CHECK:      %[[P:.*]] = tilefuse.window %x affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, ((d1 * 2) + (d2 * 3)), ((d3 * 2) + (d4 * 3)), d5)> : tensor<1x20x20x4xf32> -> tensor<1x7x3x7x3x4xf32>
// CHECK:      linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d4, d2, d5, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d3)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>]
// CHECK-SAME: ins(%[[P]], %w : tensor<1x7x3x7x3x4xf32>, tensor<3x3x4x8xf32>)
func.func @conv(%x: tensor<1x20x20x4xf32>, %w: tensor<3x3x4x8xf32>, %o: tensor<1x7x7x8xf32>) -> tensor<1x7x7x8xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 * 2 + d4 * 3, d2 * 2 + d5 * 3, d6)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d3)>, affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x20x20x4xf32>, tensor<3x3x4x8xf32>) outs(%o : tensor<1x7x7x8xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x7x7x8xf32>
  func.return %r : tensor<1x7x7x8xf32>
}

// -----

// Max pooling: max(out, in) (upstream's payload), and the window-shape operand,
// which the payload never reads, leaves once the view bounds its loops (its
// empty, unread, is erased).
// CHECK-LABEL: func.func @pool
// CHECK-NOT:  tensor.empty
// CHECK:      %[[P:.*]] = tilefuse.window %x affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, ((d2 * 2) + d3), ((d4 * 2) + d5))> : tensor<1x3x8x8xf32> -> tensor<1x3x4x2x4x2xf32>
// CHECK:      linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d4, d3, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>]
// CHECK-SAME: ins(%[[P]] : tensor<1x3x4x2x4x2xf32>) outs(%o : tensor<1x3x4x4xf32>)
// CHECK-NEXT: ^{{.*}}(%[[IN:.*]]: f32, %[[OUT:.*]]: f32):
// CHECK-NEXT:   arith.maximumf %[[OUT]], %[[IN]] : f32
func.func @pool(%x: tensor<1x3x8x8xf32>, %o: tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32> {
  %k = tensor.empty() : tensor<2x2xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%x, %k : tensor<1x3x8x8xf32>, tensor<2x2xf32>) outs(%o : tensor<1x3x4x4xf32>) {
  ^bb0(%a: f32, %unused: f32, %acc: f32):
    %m = arith.maximumf %acc, %a : f32
    linalg.yield %m : f32
  } -> tensor<1x3x4x4xf32>
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

// -----

// A window of a fill (a generic of scalars alone) exists nowhere to be viewed: the
// fill is made again in the window's shape, and the reader reads that.
// CHECK-LABEL: func.func @window_of_fill
// CHECK:      %[[E:.*]] = tensor.empty() : tensor<3x6xf32>
// CHECK:      %[[F:.*]] = linalg.generic {{.*}} ins(%one : f32) outs(%[[E]] : tensor<3x6xf32>)
// CHECK:      linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>]{{.*}} ins(%[[F]] : tensor<3x6xf32>)
// CHECK-NOT:  tilefuse.window
func.func @window_of_fill(%o: tensor<3xf32>) -> tensor<3xf32> {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<6x6xf32>
  %f = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%one : f32) outs(%e : tensor<6x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<6x6xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0 * 2, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%f : tensor<6x6xf32>) outs(%o : tensor<3xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// -----

// A window of an empty is an empty of the window's shape.
// CHECK-LABEL: func.func @window_of_empty
// CHECK:      %[[E:.*]] = tensor.empty() : tensor<3x6xf32>
// CHECK:      linalg.generic {{.*}} ins(%[[E]] : tensor<3x6xf32>)
func.func @window_of_empty(%o: tensor<3xf32>) -> tensor<3xf32> {
  %e = tensor.empty() : tensor<6x6xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0 * 2, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%e : tensor<6x6xf32>) outs(%o : tensor<3xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}
