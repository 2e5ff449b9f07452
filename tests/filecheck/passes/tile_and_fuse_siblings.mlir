// RUN: tilefuse-opt %s --split-input-file -p 'tile-and-fuse' | filecheck %s

// Sibling contractions (passes/sibling_loops.py, tile_plan.sibling_contractions): two
// contractions of one operand over the same K range that do not feed each other
// (LLaMA's SwiGLU, silu(x @ Wg) * (x @ Wu)) run in one K loop carrying both
// accumulators, the shared tile of x loaded once per step. The plan counts the three
// operand tiles of a step: 16x64 bf16 tiles through warp MMA, (stages - 1) = 3
// buffers of each, 3 x 3 x 2048 = 18432 bytes (budget.contraction_smem).
// CHECK-LABEL: func.func @gate_up
// CHECK:       tilefuse.tile_grid {{.*}} blocks = [16, 16, 64], {{.*}} working_set = 18432
// CHECK:       %[[G:.*]], %[[U:.*]] = scf.for %[[K:.*]] = {{.*}} iter_args(%{{.*}} = %[[Z:.*]], %{{.*}} = %[[Z]]) -> (tensor<16x16xf32>, tensor<16x16xf32>) {
// CHECK-NEXT:    %[[X:.*]] = tilefuse.load %0[%{{.*}}, %[[K]]] : tensor<64x256xbf16> -> tensor<16x64xbf16>
// CHECK-NEXT:    %[[WG:.*]] = tilefuse.load %1[%{{.*}}, %[[K]]]
// CHECK-NEXT:    linalg.generic {{.*}} ins(%[[X]], %[[WG]] :
// CHECK:         %[[WU:.*]] = tilefuse.load %2[%{{.*}}, %[[K]]]
// CHECK-NEXT:    linalg.generic {{.*}} ins(%[[X]], %[[WU]] :
// CHECK:         scf.yield
// CHECK-NEXT:  }
// CHECK-NOT:   scf.for
// CHECK:       ins(%[[G]] :
// CHECK:       tilefuse.store
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#nk = affine_map<(d0, d1, d2) -> (d1, d2)>
#mn3 = affine_map<(d0, d1, d2) -> (d0, d1)>
#mn = affine_map<(d0, d1) -> (d0, d1)>
#s = affine_map<(d0, d1) -> ()>
func.func @gate_up(%x: tensor<64x256xbf16>, %wg: tensor<64x256xbf16>, %wu: tensor<64x256xbf16>) -> tensor<64x64xf32> {
  %y = tilefuse.group "fused_kernel_0" ins(%x, %wg, %wu : tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<64x256xbf16>) reason "epilogue: matmul + matmul + mul" attributes {cost = #tilefuse.cost<flops = 4194304, fused_bytes = 114688, unfused_bytes = 200000, tc_flops = 4194304, sfu_ops = 0, dtype = "bf16">} {
  ^bb0(%0: tensor<64x256xbf16>, %1: tensor<64x256xbf16>, %2: tensor<64x256xbf16>):
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<64x64xf32>
    %i = linalg.generic {indexing_maps = [#s, #mn], iterator_types = ["parallel", "parallel"]} ins(%zero : f32) outs(%e : tensor<64x64xf32>) {
    ^bb0(%a: f32, %b: f32):
      linalg.yield %a : f32
    } -> tensor<64x64xf32>
    %g = linalg.generic {indexing_maps = [#mk, #nk, #mn3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%0, %1 : tensor<64x256xbf16>, tensor<64x256xbf16>) outs(%i : tensor<64x64xf32>) {
    ^bb0(%a: bf16, %b: bf16, %c: f32):
      %af = arith.extf %a : bf16 to f32
      %bf = arith.extf %b : bf16 to f32
      %m = arith.mulf %af, %bf : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
    } -> tensor<64x64xf32>
    %sg = linalg.generic {indexing_maps = [#mn, #mn], iterator_types = ["parallel", "parallel"]} ins(%g : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
    ^bb0(%a: f32, %b: f32):
      %n = arith.negf %a : f32
      %ex = math.exp %n : f32
      linalg.yield %ex : f32
    } -> tensor<64x64xf32>
    %u = linalg.generic {indexing_maps = [#mk, #nk, #mn3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%0, %2 : tensor<64x256xbf16>, tensor<64x256xbf16>) outs(%i : tensor<64x64xf32>) {
    ^bb0(%a: bf16, %b: bf16, %c: f32):
      %af = arith.extf %a : bf16 to f32
      %bf = arith.extf %b : bf16 to f32
      %m = arith.mulf %af, %bf : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
    } -> tensor<64x64xf32>
    %p = linalg.generic {indexing_maps = [#mn, #mn, #mn], iterator_types = ["parallel", "parallel"]} ins(%sg, %u : tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      linalg.yield %m : f32
    } -> tensor<64x64xf32>
    tilefuse.yield %p : tensor<64x64xf32>
  } -> (tensor<64x64xf32>)
  func.return %y : tensor<64x64xf32>
}

// -----

// Contractions over K dims of different lengths (256 and 512) are not siblings: the
// primary (the longer reduction, 512, written second) is looped, the other (reduced by
// another op of the group) is whole in the tile; one loop, carrying one accumulator.
// CHECK-LABEL: func.func @two_reduction_lengths
// CHECK:       tilefuse.load %0{{.*}} -> tensor<64x256xbf16>
// CHECK:       scf.for {{.*}} -> (tensor<64x64xf32>) {
// CHECK-NEXT:    tilefuse.load %2{{.*}} -> tensor<64x64xbf16>
// CHECK-NOT:   scf.for
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#nk = affine_map<(d0, d1, d2) -> (d1, d2)>
#mn3 = affine_map<(d0, d1, d2) -> (d0, d1)>
#mn = affine_map<(d0, d1) -> (d0, d1)>
#s = affine_map<(d0, d1) -> ()>
func.func @two_reduction_lengths(%x: tensor<64x256xbf16>, %wg: tensor<64x256xbf16>, %wu: tensor<64x512xbf16>) -> tensor<64x64xf32> {
  %y = tilefuse.group "fused_kernel_0" ins(%x, %wg, %wu : tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<64x512xbf16>) reason "epilogue: matmul + matmul + mul" attributes {cost = #tilefuse.cost<flops = 4194304, fused_bytes = 114688, unfused_bytes = 200000, tc_flops = 4194304, sfu_ops = 0, dtype = "bf16">} {
  ^bb0(%0: tensor<64x256xbf16>, %1: tensor<64x256xbf16>, %2: tensor<64x512xbf16>):
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<64x64xf32>
    %i = linalg.generic {indexing_maps = [#s, #mn], iterator_types = ["parallel", "parallel"]} ins(%zero : f32) outs(%e : tensor<64x64xf32>) {
    ^bb0(%a: f32, %b: f32):
      linalg.yield %a : f32
    } -> tensor<64x64xf32>
    %g = linalg.generic {indexing_maps = [#mk, #nk, #mn3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%0, %1 : tensor<64x256xbf16>, tensor<64x256xbf16>) outs(%i : tensor<64x64xf32>) {
    ^bb0(%a: bf16, %b: bf16, %c: f32):
      %af = arith.extf %a : bf16 to f32
      %bf = arith.extf %b : bf16 to f32
      %m = arith.mulf %af, %bf : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
    } -> tensor<64x64xf32>
    %sg = linalg.generic {indexing_maps = [#mn, #mn], iterator_types = ["parallel", "parallel"]} ins(%g : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
    ^bb0(%a: f32, %b: f32):
      %n = arith.negf %a : f32
      %ex = math.exp %n : f32
      linalg.yield %ex : f32
    } -> tensor<64x64xf32>
    %u = linalg.generic {indexing_maps = [#mk, #nk, #mn3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%2, %2 : tensor<64x512xbf16>, tensor<64x512xbf16>) outs(%i : tensor<64x64xf32>) {
    ^bb0(%a: bf16, %b: bf16, %c: f32):
      %af = arith.extf %a : bf16 to f32
      %bf = arith.extf %b : bf16 to f32
      %m = arith.mulf %af, %bf : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
    } -> tensor<64x64xf32>
    %p = linalg.generic {indexing_maps = [#mn, #mn, #mn], iterator_types = ["parallel", "parallel"]} ins(%sg, %u : tensor<64x64xf32>, tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      linalg.yield %m : f32
    } -> tensor<64x64xf32>
    tilefuse.yield %p : tensor<64x64xf32>
  } -> (tensor<64x64xf32>)
  func.return %y : tensor<64x64xf32>
}
