// RUN: not tilefuse-opt %s -p inline-calls -t triton 2>&1 | filecheck %s

// An op the kernel printer has no handler for is an error at that op, naming it.

// CHECK: print_unsupported.mlir:15:7: error: 'tensor.extract_slice' op is not supported by the Triton backend (in a tile program: tilefuse.load/store, scf.for, structured ops, arith and math ops)
// CHECK-NOT: Traceback
func.func @slice(%x: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %y = tilefuse.group "k0" ins(%x : tensor<8x32xf32>) {
  ^bb0(%xa: tensor<8x32xf32>):
    %e = tensor.empty() : tensor<8x32xf32>
    %r = tilefuse.tile_grid [1] outs(%e : tensor<8x32xf32>) warps 4 stages 1 {
    ^bb0(%i: index, %out: tensor<8x32xf32>):
      %c0 = arith.constant 0 : index
      %xt = tilefuse.load %xa[%c0, %c0] : tensor<8x32xf32> -> tensor<8x32xf32>
      %s = tensor.extract_slice %xt[0, 0] [8, 32] [1, 1] : tensor<8x32xf32> to tensor<8x32xf32>
      tilefuse.store %s into %out[%c0, %c0] : tensor<8x32xf32> into tensor<8x32xf32>
    } -> (tensor<8x32xf32>)
    tilefuse.yield %r : tensor<8x32xf32>
  } -> (tensor<8x32xf32>)
  func.return %y : tensor<8x32xf32>
}
