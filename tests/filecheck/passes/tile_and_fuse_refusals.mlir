// RUN: tilefuse-opt %s -p tile-and-fuse 2>&1 | filecheck %s
// RUN: tilefuse-opt %s -p tile-and-fuse 2>&1 | filecheck %s --check-prefix=GATHER

// A reduction whose payload is not `combiner(x, acc)` cannot be masked on a
// partial tile (300 columns in a 512-wide tile): the pass says why, at the
// op's location, and leaves the group untiled (still correct IR).
// CHECK: tile_and_fuse_refusals.mlir:[[# @LINE + 4]]:3: warning: 'tilefuse.group' op left untiled: cannot mask this reduction's edge tiles: its payload does not end in a recognised combiner (addf, mulf, maximumf, minimumf, maxnumf, minnumf, addi, maxsi, minsi, andi, ori, xori)
// CHECK: tilefuse.group "fused_kernel_0"
// CHECK-NOT: tilefuse.tile_grid
func.func @decay(%x: tensor<8x300xf32>) -> tensor<8xf32> {
  %r = tilefuse.group "fused_kernel_0" ins(%x : tensor<8x300xf32>) reason "reduction: reduce_add (2 ops)" attributes {cost = #tilefuse.cost<flops = 4800, fused_bytes = 9632, unfused_bytes = 9696, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
  ^bb0(%0: tensor<8x300xf32>):
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<8xf32>
    %f = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%zero : f32) outs(%e : tensor<8xf32>) {
    ^bb0(%1: f32, %2: f32):
      linalg.yield %1 : f32
    } -> tensor<8xf32>
    %r_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%0 : tensor<8x300xf32>) outs(%f : tensor<8xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %half = arith.constant 5.000000e-01 : f32
      %scaled = arith.mulf %acc, %half : f32
      %v = arith.addf %scaled, %in : f32
      linalg.yield %v : f32
    } -> tensor<8xf32>
    tilefuse.yield %r_1 : tensor<8xf32>
  } -> (tensor<8xf32>)
  func.return %r : tensor<8xf32>
}

// A group that gathers from a tensor it computes itself (fusion-groups never
// makes one): a gather reads memory, so the group is left untiled, with why.
// GATHER: tile_and_fuse_refusals.mlir:[[# @LINE + 4]]:3: warning: 'tilefuse.group' op left untiled: gather reads a tensor the same group computes (exp) by tensor.extract: a gather reads memory
// GATHER-LABEL: func.func @gather_inside
// GATHER-NOT: tilefuse.tile_grid
func.func @gather_inside(%x: tensor<7x10xf32>, %t: tensor<7xi64>) -> tensor<7xf32> {
  %r = tilefuse.group "fused_kernel_0" ins(%x, %t : tensor<7x10xf32>, tensor<7xi64>) reason "pointwise: exp + gather (2 ops)" attributes {cost = #tilefuse.cost<flops = 70, fused_bytes = 364, unfused_bytes = 924, tc_flops = 0, sfu_ops = 70, dtype = "f32">} {
  ^bb0(%0: tensor<7x10xf32>, %1: tensor<7xi64>):
    %e = tensor.empty() : tensor<7x10xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%0 : tensor<7x10xf32>) outs(%e : tensor<7x10xf32>) {
    ^bb0(%in: f32, %out: f32):
      %v = math.exp %in : f32
      linalg.yield %v : f32
    } -> tensor<7x10xf32>
    %e7 = tensor.empty() : tensor<7xf32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%1 : tensor<7xi64>) outs(%e7 : tensor<7xf32>) {
    ^bb0(%in: i64, %out: f32):
      %i = linalg.index 0 : index
      %j = arith.index_cast %in : i64 to index
      %v = tensor.extract %y[%i, %j] : tensor<7x10xf32>
      linalg.yield %v : f32
    } -> tensor<7xf32>
    tilefuse.yield %g : tensor<7xf32>
  } -> (tensor<7xf32>)
  func.return %r : tensor<7xf32>
}
