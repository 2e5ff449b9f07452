// RUN: tilefuse-opt %s --split-input-file -p fold-reshape-of-creation | filecheck %s

// An expansion of an empty is an empty of the expanded shape; a collapse of a
// fill is a fill of the collapsed shape. The originals, unread, are erased.
// CHECK-LABEL: func.func @creations
// CHECK-NOT:   tensor.expand_shape
// CHECK-NOT:   tensor.collapse_shape
// CHECK-DAG:   %[[E:.*]] = tensor.empty() : tensor<8x1xf32>
// CHECK-DAG:   %[[E2:.*]] = tensor.empty() : tensor<8xf32>
// CHECK-DAG:   %[[F:.*]] = linalg.fill ins(%zero : f32) outs(%[[E2]] : tensor<8xf32>) -> tensor<8xf32>
// CHECK-NOT:   tensor<2x4xf32>
// CHECK:       func.return %[[E]], %[[F]]
func.func @creations() -> (tensor<8x1xf32>, tensor<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %v = tensor.expand_shape %e [[0, 1]] output_shape [8, 1] : tensor<8xf32> into tensor<8x1xf32>
  %e2 = tensor.empty() : tensor<2x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x4xf32>) -> tensor<2x4xf32>
  %c = tensor.collapse_shape %f [[0, 1]] : tensor<2x4xf32> into tensor<8xf32>
  func.return %v, %c : tensor<8x1xf32>, tensor<8xf32>
}

// -----

// A reshape of an argument is a host view of real data: it stays.
// CHECK-LABEL: func.func @argument
// CHECK:       tensor.collapse_shape %x
func.func @argument(%x: tensor<2x4xf32>) -> tensor<8xf32> {
  %c = tensor.collapse_shape %x [[0, 1]] : tensor<2x4xf32> into tensor<8xf32>
  func.return %c : tensor<8xf32>
}

// -----

// A static slice of an empty is an empty of the slice's shape, of a fill a fill
// (torch's circular padding slices the empty it then writes the padded rows into).
// CHECK-LABEL: func.func @slices
// CHECK-NOT:   tensor.extract_slice
// CHECK-DAG:   tensor.empty() : tensor<2x3xf32>
// CHECK-DAG:   %[[E:.*]] = tensor.empty() : tensor<1x4xf32>
// CHECK-DAG:   linalg.fill ins(%zero : f32) outs(%[[E]] : tensor<1x4xf32>) -> tensor<1x4xf32>
func.func @slices() -> (tensor<2x3xf32>, tensor<1x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %s = tensor.extract_slice %e[1, 1] [2, 3] [1, 1] : tensor<4x4xf32> to tensor<2x3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %t = tensor.extract_slice %f[3, 0] [1, 4] [1, 1] : tensor<4x4xf32> to tensor<1x4xf32>
  func.return %s, %t : tensor<2x3xf32>, tensor<1x4xf32>
}
