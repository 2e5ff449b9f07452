// RUN: tilefuse-opt %s --split-input-file -p 'tile-and-fuse' 2>&1 | filecheck %s

// A causal mask (SDPA's is_causal as torch-mlir exports it, after
// fold-unit-dims): the `arange` %a is read along j and along i by one op.
// Each read gets its own copy of the arange, offset by its own loop's tile.
// CHECK-LABEL: func.func @causal_mask
// CHECK:       tilefuse.tile_grid [1, 3]
// CHECK-NEXT:  ^bb0(%[[P0:.*]]: index, %[[P1:.*]]: index, %{{.*}}: tensor<40x40xf32>):
// CHECK:         %[[I:.*]] = arith.muli %[[P0]], %{{.*}} : index
// CHECK:         %[[J:.*]] = arith.muli %[[P1]], %{{.*}} : index
// CHECK:         %[[AI:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<64xi64>)
// CHECK:           linalg.index 0
// CHECK-NEXT:      arith.addi %{{.*}}, %[[I]] : index
// CHECK:         %[[AJ:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<16xi64>)
// CHECK:           linalg.index 0
// CHECK-NEXT:      arith.addi %{{.*}}, %[[J]] : index
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>]{{.*}} ins(%[[AI]], %[[AJ]] : tensor<64xi64>, tensor<16xi64>) outs(%{{.*}} : tensor<16x64xi64>)
// CHECK:         arith.subi
// CHECK:         tilefuse.load %{{.*}}[%[[J]], %[[I]]] : tensor<40x40xf32> -> tensor<16x64xf32>
func.func @causal_mask(%s: tensor<40x40xf32>) -> tensor<40x40xf32> {
  %m = tilefuse.group "fused_kernel_0" ins(%s : tensor<40x40xf32>) reason "pointwise: subi + cmpi (3 ops)" attributes {cost = #tilefuse.cost<flops = 1600, fused_bytes = 12800, unfused_bytes = 39360, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
  ^bb0(%0: tensor<40x40xf32>):
    %e = tensor.empty() : tensor<40xi64>
    %a = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%e : tensor<40xi64>) {
    ^bb0(%out: i64):
      %i = linalg.index 0 : index
      %c = arith.index_cast %i : index to i64
      linalg.yield %c : i64
    } -> tensor<40xi64>
    %e2 = tensor.empty() : tensor<40x40xi64>
    %d = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a, %a : tensor<40xi64>, tensor<40xi64>) outs(%e2 : tensor<40x40xi64>) {
    ^bb0(%in: i64, %in2: i64, %out_1: i64):
      %x = arith.subi %in, %in2 : i64
      linalg.yield %x : i64
    } -> tensor<40x40xi64>
    %e3 = tensor.empty() : tensor<40x40xf32>
    %c0 = arith.constant 0 : i64
    %ninf = arith.constant 0xff800000 : f32
    %m_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%d, %0 : tensor<40x40xi64>, tensor<40x40xf32>) outs(%e3 : tensor<40x40xf32>) {
    ^bb0(%in_1: i64, %v: f32, %out_2: f32):
      %k = arith.cmpi sle, %in_1, %c0 : i64
      %y = arith.select %k, %v, %ninf : f32
      linalg.yield %y : f32
    } -> tensor<40x40xf32>
    tilefuse.yield %m_1 : tensor<40x40xf32>
  } -> (tensor<40x40xf32>)
  func.return %m : tensor<40x40xf32>
}

// -----

// A copy's own producers are copied where their reads split too: `exp` reads
// `t = tanh(x)`; both are computed once per read of `exp`'s result, and `x`
// (a group input) is loaded along each loop.
// CHECK-LABEL: func.func @chain
// CHECK:       tilefuse.tile_grid
// CHECK:         %[[XJ:.*]] = tilefuse.load %{{.*}} : tensor<45xf32> -> tensor<64xf32>
// CHECK:         math.tanh
// CHECK:         math.exp
// CHECK:         %[[XI:.*]] = tilefuse.load %{{.*}} : tensor<45xf32> -> tensor<16xf32>
// CHECK:         math.tanh
// CHECK:         math.exp
// CHECK-NOT:     math.tanh
// CHECK:         arith.subf
// CHECK-NOT:     math.exp
// CHECK:         tilefuse.store
func.func @chain(%x: tensor<45xf32>) -> tensor<45x45xf32> {
  %r = tilefuse.group "fused_kernel_0" ins(%x : tensor<45xf32>) reason "pointwise: tanh + exp + sub (3 ops)" attributes {cost = #tilefuse.cost<flops = 2025, fused_bytes = 8280, unfused_bytes = 8640, tc_flops = 0, sfu_ops = 180, dtype = "f32">} {
  ^bb0(%0: tensor<45xf32>):
    %e1 = tensor.empty() : tensor<45xf32>
    %t = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%0 : tensor<45xf32>) outs(%e1 : tensor<45xf32>) {
    ^bb0(%in: f32, %out: f32):
      %v = math.tanh %in : f32
      linalg.yield %v : f32
    } -> tensor<45xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%t : tensor<45xf32>) outs(%e1 : tensor<45xf32>) {
    ^bb0(%in: f32, %out: f32):
      %v = math.exp %in : f32
      linalg.yield %v : f32
    } -> tensor<45xf32>
    %e = tensor.empty() : tensor<45x45xf32>
    %d = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%y, %y : tensor<45xf32>, tensor<45xf32>) outs(%e : tensor<45x45xf32>) {
    ^bb0(%p: f32, %q: f32, %out: f32):
      %v = arith.subf %p, %q : f32
      linalg.yield %v : f32
    } -> tensor<45x45xf32>
    tilefuse.yield %d : tensor<45x45xf32>
  } -> (tensor<45x45xf32>)
  func.return %r : tensor<45x45xf32>
}

// -----

// A reduction read along two loops would be recomputed per read: refused, at
// the group, naming the ops (the group stays untiled; fusion-groups does not
// make such a group, this one is written by hand).
// CHECK: tile_and_fuse_split_reads.mlir:[[# @LINE + 4]]:3: warning: 'tilefuse.group' op left untiled: cannot tile: sub reads a result computed from reduce_add along two different loops, and a reduction is not recomputed per read
// CHECK-LABEL: func.func @reduced_twice
// CHECK-NOT:   tilefuse.tile_grid
func.func @reduced_twice(%x: tensor<12x30xf32>) -> tensor<12x12xf32> {
  %r = tilefuse.group "fused_kernel_0" ins(%x : tensor<12x30xf32>) reason "reduction: reduce_add + sub (3 ops)" attributes {cost = #tilefuse.cost<flops = 504, fused_bytes = 2016, unfused_bytes = 2208, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
  ^bb0(%0: tensor<12x30xf32>):
    %zero = arith.constant 0.000000e+00 : f32
    %e1 = tensor.empty() : tensor<12xf32>
    %f = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%zero : f32) outs(%e1 : tensor<12xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<12xf32>
    %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%0 : tensor<12x30xf32>) outs(%f : tensor<12xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %v = arith.addf %in, %acc : f32
      linalg.yield %v : f32
    } -> tensor<12xf32>
    %e = tensor.empty() : tensor<12x12xf32>
    %d = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%s, %s : tensor<12xf32>, tensor<12xf32>) outs(%e : tensor<12x12xf32>) {
    ^bb0(%p: f32, %q: f32, %out: f32):
      %v = arith.subf %p, %q : f32
      linalg.yield %v : f32
    } -> tensor<12x12xf32>
    tilefuse.yield %d : tensor<12x12xf32>
  } -> (tensor<12x12xf32>)
  func.return %r : tensor<12x12xf32>
}
