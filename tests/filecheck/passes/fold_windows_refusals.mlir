// RUN: tilefuse-opt %s -p fold-windows --verify-diagnostics | filecheck %s

// A read at `d0 - d1 + 3` steps backwards through its operand: not a window
// (each index a sum of loop dims times non-negative constants), so the pass
// refuses, at the op's location.
// CHECK: fold_windows_refusals.mlir:[[# @LINE + 2]]:3: error: 'linalg.generic' op has an unsupported indexing map (d0, d1) -> (((d0 + (d1 * -1)) + 3)) is not a projected permutation
func.func @backwards(%x: tensor<6xf32>, %w: tensor<4xf32>, %o: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0 - d1 + 3)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x, %w : tensor<6xf32>, tensor<4xf32>) outs(%o : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %m, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
