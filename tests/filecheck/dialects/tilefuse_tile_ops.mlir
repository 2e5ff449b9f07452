// RUN: tilefuse-opt %s | tilefuse-opt | filecheck %s
// RUN: tilefuse-opt %s --print-op-generic | tilefuse-opt | filecheck %s
// RUN: cat %s | tilefuse-opt - | filecheck %s

// CHECK-LABEL: func.func @tile_grid_roundtrip
// CHECK:       %{{.*}} = tilefuse.tile_grid [18] outs(%{{.*}} : tensor<70x333xf32>) warps 4 stages 1 {
// CHECK-NEXT:  ^{{.*}}(%[[PID:.*]]: index, %[[OUT:.*]]: tensor<70x333xf32>):
// CHECK:         %[[T:.*]] = tilefuse.load %{{.*}}[%{{.*}}, %{{.*}}] : tensor<70x333xf32> -> tensor<4x512xf32>
// CHECK-NEXT:    tilefuse.store %[[T]] into %[[OUT]][%{{.*}}, %{{.*}}] : tensor<4x512xf32> into tensor<70x333xf32>
// CHECK-NEXT:  } -> (tensor<70x333xf32>)
func.func @tile_grid_roundtrip(%x: tensor<70x333xf32>) -> tensor<70x333xf32> {
  %e = tensor.empty() : tensor<70x333xf32>
  %r = tilefuse.tile_grid [18] outs(%e : tensor<70x333xf32>) warps 4 stages 1 {
  ^bb0(%pid: index, %out: tensor<70x333xf32>):
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %off = arith.muli %pid, %c4 : index
    %t = tilefuse.load %x[%off, %c0] : tensor<70x333xf32> -> tensor<4x512xf32>
    tilefuse.store %t into %out[%off, %c0] : tensor<4x512xf32> into tensor<70x333xf32>
  } -> (tensor<70x333xf32>)
  func.return %r : tensor<70x333xf32>
}
