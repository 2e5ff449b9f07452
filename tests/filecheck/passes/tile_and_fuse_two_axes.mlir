// RUN: tilefuse-opt %s --split-input-file -p 'tile-and-fuse{smem_budget=1024}' 2>/dev/null | filecheck %s
// RUN: tilefuse-opt %s --split-input-file -p 'tile-and-fuse{smem_budget=1024}' 2>&1 >/dev/null | filecheck %s --check-prefix=WARN

// A sum over a whole 37x300 matrix with 1 KB of shared memory: no row fits,
// so rows are looped one at a time and columns in chunks, in ONE flat loop
// whose index is split by div/mod; the lanes are combined after it.
// CHECK-LABEL: func.func @total
// CHECK:       tilefuse.tile_grid [] outs
// CHECK:         %[[SUM:.*]] = scf.for %[[Q:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK:           arith.divsi %[[Q]]
// CHECK:           arith.remsi
// CHECK:           tilefuse.load %{{.*}} : tensor<37x300xf32> -> tensor<1x{{[0-9]+}}xf32>
// CHECK:           scf.yield
// CHECK:         linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]} ins(%[[SUM]]
// CHECK:         tilefuse.store
func.func @total(%x: tensor<37x300xf32>) -> tensor<f32> {
  %s = tilefuse.group "fused_kernel_0" ins(%x : tensor<37x300xf32>) reason "reduction: reduce_add (2 ops)" attributes {cost = #tilefuse.cost<flops = 11100, fused_bytes = 44404, unfused_bytes = 44412, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
  ^bb0(%0: tensor<37x300xf32>):
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<f32>
    %init = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []} ins(%zero : f32) outs(%e : tensor<f32>) {
    ^bb0(%1: f32, %2: f32):
      linalg.yield %1 : f32
    } -> tensor<f32>
    %s_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%0 : tensor<37x300xf32>) outs(%init : tensor<f32>) {
    ^bb0(%in: f32, %acc: f32):
      %v = arith.addf %in, %acc : f32
      linalg.yield %v : f32
    } -> tensor<f32>
    tilefuse.yield %s_1 : tensor<f32>
  } -> (tensor<f32>)
  func.return %s : tensor<f32>
}

// -----

// Row sums feeding a column max in one group (located at the group):
// the two reductions each cover only one of the looped axes, which one flat
// loop cannot express. Refused, with the reason, and left untiled (correct IR).
// WARN: tile_and_fuse_two_axes.mlir:[[# @LINE + 4]]:3: warning: 'tilefuse.group' op left untiled: cannot tile: reduce_add reduces some but not all of the 2 looped dims
// CHECK-LABEL: func.func @rows_then_columns
// CHECK-NOT: tilefuse.tile_grid
func.func @rows_then_columns(%x: tensor<65x300xf32>) -> tensor<300xf32> {
  %cols = tilefuse.group "fused_kernel_0" ins(%x : tensor<65x300xf32>) reason "reduction: reduce_add + sub + reduce_maximum (5 ops)" attributes {cost = #tilefuse.cost<flops = 58500, fused_bytes = 235200, unfused_bytes = 316640, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
  ^bb0(%0: tensor<65x300xf32>):
    %zero = arith.constant 0.000000e+00 : f32
    %er = tensor.empty() : tensor<65xf32>
    %f0 = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%zero : f32) outs(%er : tensor<65xf32>) {
    ^bb0(%1: f32, %2: f32):
      linalg.yield %1 : f32
    } -> tensor<65xf32>
    %rows = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%0 : tensor<65x300xf32>) outs(%f0 : tensor<65xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %v = arith.addf %in, %acc : f32
      linalg.yield %v : f32
    } -> tensor<65xf32>
    %e = tensor.empty() : tensor<65x300xf32>
    %d = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%0, %rows : tensor<65x300xf32>, tensor<65xf32>) outs(%e : tensor<65x300xf32>) {
    ^bb0(%a: f32, %r: f32, %o: f32):
      %y = arith.subf %a, %r : f32
      linalg.yield %y : f32
    } -> tensor<65x300xf32>
    %ninf = arith.constant 0xff800000 : f32
    %ec = tensor.empty() : tensor<300xf32>
    %f1 = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%ninf : f32) outs(%ec : tensor<300xf32>) {
    ^bb0(%3: f32, %4: f32):
      linalg.yield %3 : f32
    } -> tensor<300xf32>
    %cols_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%d : tensor<65x300xf32>) outs(%f1 : tensor<300xf32>) {
    ^bb0(%in_1: f32, %acc_1: f32):
      %v_1 = arith.maximumf %in_1, %acc_1 : f32
      linalg.yield %v_1 : f32
    } -> tensor<300xf32>
    tilefuse.yield %cols_1 : tensor<300xf32>
  } -> (tensor<300xf32>)
  func.return %cols : tensor<300xf32>
}
