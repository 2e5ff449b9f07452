// RUN: tilefuse-opt %s -p 'linalg-generalize,fusion-groups,tile-and-fuse' 2>&1 | filecheck %s

// A reduction whose payload is not `combiner(x, acc)` cannot be masked on a
// partial tile (300 columns in a 512-wide tile): the pass says why, at the
// op's location, and leaves the group untiled (still correct IR).

// CHECK: tile_and_fuse_refusals.mlir:[[# @LINE + 7]]:3: warning: 'tilefuse.group' op left untiled: cannot mask this reduction's edge tiles: its payload does not end in a recognised combiner (addf, mulf, maximumf, minimumf, maxnumf, minnumf, addi, maxsi, minsi)
// CHECK: tilefuse.group "fused_kernel_0"
// CHECK-NOT: tilefuse.tile_grid
func.func @decay(%x: tensor<8x300xf32>) -> tensor<8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<8x300xf32>) outs(%f : tensor<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %half = arith.constant 0.5 : f32
    %scaled = arith.mulf %acc, %half : f32
    %v = arith.addf %scaled, %in : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  func.return %r : tensor<8xf32>
}
