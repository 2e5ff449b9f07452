// RUN: tilefuse-opt %s --split-input-file -p 'linalg-generalize,fusion-groups,tile-and-fuse{smem_budget=1024}' 2>/dev/null | filecheck %s
// RUN: tilefuse-opt %s --split-input-file -p 'linalg-generalize,fusion-groups,tile-and-fuse{smem_budget=1024}' 2>&1 >/dev/null | filecheck %s --check-prefix=WARN

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
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%x : tensor<37x300xf32>) outs(%init : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %v = arith.addf %in, %acc : f32
      linalg.yield %v : f32
    }
  func.return %s : tensor<f32>
}

// -----

// Row sums feeding a column max in one group (located at its root, the max):
// the two reductions each cover only one of the looped axes, which one flat
// loop cannot express. Refused, with the reason, and left untiled (correct IR).

// WARN: tile_and_fuse_two_axes.mlir:[[# @LINE + 21]]:3: warning: 'tilefuse.group' op left untiled: cannot tile: reduce_add reduces some but not all of the 2 looped dims
// CHECK-LABEL: func.func @rows_then_columns
// CHECK-NOT: tilefuse.tile_grid
func.func @rows_then_columns(%x: tensor<65x300xf32>) -> tensor<300xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %er = tensor.empty() : tensor<65xf32>
  %ec = tensor.empty() : tensor<300xf32>
  %e = tensor.empty() : tensor<65x300xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%er : tensor<65xf32>) -> tensor<65xf32>
  %rows = linalg.reduce ins(%x : tensor<65x300xf32>) outs(%f0 : tensor<65xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %v = arith.addf %in, %acc : f32
      linalg.yield %v : f32
    }
  %d = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x, %rows : tensor<65x300xf32>, tensor<65xf32>) outs(%e : tensor<65x300xf32>) {
  ^bb0(%a: f32, %r: f32, %o: f32):
    %y = arith.subf %a, %r : f32
    linalg.yield %y : f32
  } -> tensor<65x300xf32>
  %f1 = linalg.fill ins(%ninf : f32) outs(%ec : tensor<300xf32>) -> tensor<300xf32>
  %cols = linalg.reduce ins(%d : tensor<65x300xf32>) outs(%f1 : tensor<300xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %v = arith.maximumf %in, %acc : f32
      linalg.yield %v : f32
    }
  func.return %cols : tensor<300xf32>
}
