// RUN: tilefuse-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @load_rank(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %c0 = arith.constant 0 : index
  %t = tilefuse.load %x[%c0] : tensor<8x8xf32> -> tensor<4x4xf32>
  func.return %x : tensor<8x8xf32>
}
// CHECK: error: 'tilefuse.load' op tilefuse.load needs a tile and one offset per dimension of the tensor.

// -----

func.func @store_outside_grid(%x: tensor<8xf32>) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  tilefuse.store %x into %x[%c0] : tensor<8xf32> into tensor<8xf32>
  func.return %x : tensor<8xf32>
}
// CHECK: error: 'tilefuse.store' op tilefuse.store must write to a destination of its enclosing tile grid.

// -----

func.func @grid_args(%x: tensor<8xf32>) -> tensor<8xf32> {
  %r = tilefuse.tile_grid [2] outs(%x : tensor<8xf32>) warps 4 stages 1 {
  ^bb0(%pid: index):
  } -> (tensor<8xf32>)
  func.return %r : tensor<8xf32>
}
// CHECK: error: 'tilefuse.tile_grid' op A tile grid of rank 1 with 1 outputs needs 2 block arguments, not 1.
