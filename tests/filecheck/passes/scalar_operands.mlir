// RUN: tilefuse-opt %s --split-input-file -p scalar-operands | filecheck %s

// A 0-d tensor's scalar, extracted at function level and read in a payload
// (torch-mlir's scalar operands): the generic reads the 0-d tensor as an input
// through `-> ()`, its payload the new block argument; the extract goes.
// CHECK-LABEL: func.func @scaled
// CHECK-NOT:   tensor.extract
// CHECK:       linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>]{{.*}} ins(%x, %t : tensor<8xf32>, tensor<f32>)
// CHECK-NEXT:  ^{{.*}}(%[[A:.*]]: f32, %[[S:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:    arith.mulf %[[A]], %[[S]] : f32
func.func @scaled(%x: tensor<8xf32>, %t: tensor<f32>) -> tensor<8xf32> {
  %v = tensor.extract %t[] : tensor<f32>
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %v : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  func.return %r : tensor<8xf32>
}

// -----

// A use outside any payload (a fill's value) is left as it is, with its extract.
// CHECK-LABEL: func.func @fill_of_scalar
// CHECK:       %[[V:.*]] = tensor.extract %t[] : tensor<f32>
// CHECK:       linalg.generic {{.*}} ins(%[[V]] : f32)
func.func @fill_of_scalar(%t: tensor<f32>) -> tensor<8xf32> {
  %v = tensor.extract %t[] : tensor<f32>
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%v : f32) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<8xf32>
  func.return %r : tensor<8xf32>
}
