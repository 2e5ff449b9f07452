// RUN: tilefuse-opt %s --split-input-file -p 'tile-and-fuse' | filecheck %s
// RUN: tilefuse-opt %s --split-input-file -p 'tile-and-fuse{smem_budget=2048}' | filecheck %s --check-prefix=LOOP

// Row sum with a fill init. With the whole row in the tile, the reduction is
// one op on a 8x512 tile, masked past column 300. With a 2 KB budget the row
// is looped in chunks and the fill stays OUTSIDE the loop (llvm/llvm-project#58398
// puts it inside and recomputes the init every iteration); inside, each lane
// of the chunk adds to its own partial sum.
// CHECK-LABEL: func.func @row_sum
// CHECK:       tilefuse.tile_grid [5] outs
// CHECK:         %[[INIT:.*]] = linalg.generic {{.*}} ins(%{{.*}} : f32) outs(%{{.*}} : tensor<8xf32>)
// CHECK:         %[[X:.*]] = tilefuse.load %{{.*}}[%{{.*}}, %{{.*}}] : tensor<37x300xf32> -> tensor<8x512xf32>
// CHECK:         linalg.generic {{.*}} ins(%[[X]] : tensor<8x512xf32>) outs(%[[INIT]] : tensor<8xf32>)
// CHECK:           %[[J:.*]] = linalg.index 1 : index
// CHECK-NEXT:      %[[N:.*]] = arith.constant 300 : index
// CHECK-NEXT:      %[[OK:.*]] = arith.cmpi slt, %[[J]], %[[N]] : index
// CHECK-NEXT:      %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[SEL:.*]] = arith.select %[[OK]], %{{.*}}, %[[ZERO]] : f32
// CHECK-NEXT:      arith.addf %[[SEL]], %{{.*}} : f32
// CHECK:         tilefuse.store %{{.*}} into %{{.*}}[%{{.*}}] : tensor<8xf32> into tensor<37xf32>
// LOOP-LABEL: func.func @row_sum
// LOOP:       tilefuse.tile_grid
// LOOP:         %[[INIT:.*]] = linalg.generic {{.*}} ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1xf32>)
// The sum is kept per lane of the chunk (from the identity), combined after the loop.
// LOOP:         %[[LANES:.*]] = linalg.generic {{.*}} ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x256xf32>)
// LOOP:         %[[SUM:.*]] = scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[LANES]]) -> (tensor<1x256xf32>) {
// LOOP-NOT:       ins(%{{.*}} : f32)
// LOOP:           %[[X:.*]] = tilefuse.load %{{.*}}[%{{.*}}, %[[K]]] : tensor<37x300xf32> -> tensor<1x256xf32>
// LOOP:           %[[R:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%[[X]] : {{.*}}) outs(%[[ACC]] : tensor<1x256xf32>)
// LOOP:             linalg.index 1
// LOOP-NEXT:        arith.addi %{{.*}}, %[[K]] : index
// LOOP:             arith.select
// LOOP:           scf.yield %[[R]] : tensor<1x256xf32>
// LOOP:         %[[TOTAL:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[SUM]] : tensor<1x256xf32>) outs(%[[INIT]] : tensor<1xf32>)
// LOOP-NEXT:    ^bb0(%[[L:.*]]: f32, %[[A:.*]]: f32):
// LOOP-NEXT:      arith.addf %[[L]], %[[A]] : f32
// LOOP:         tilefuse.store %[[TOTAL]]
func.func @row_sum(%x: tensor<37x300xf32>) -> tensor<37xf32> {
  %s = tilefuse.group "fused_kernel_0" ins(%x : tensor<37x300xf32>) reason "reduction: reduce_add (2 ops)" attributes {cost = #tilefuse.cost<flops = 11100, fused_bytes = 44548, unfused_bytes = 44844, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
  ^bb0(%0: tensor<37x300xf32>):
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<37xf32>
    %init = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%zero : f32) outs(%e : tensor<37xf32>) {
    ^bb0(%1: f32, %2: f32):
      linalg.yield %1 : f32
    } -> tensor<37xf32>
    %s_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%0 : tensor<37x300xf32>) outs(%init : tensor<37xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %v = arith.addf %in, %acc : f32
      linalg.yield %v : f32
    } -> tensor<37xf32>
    tilefuse.yield %s_1 : tensor<37xf32>
  } -> (tensor<37xf32>)
  func.return %s : tensor<37xf32>
}

// -----

// A producer with two users in the group (t = tanh(x) feeds both the sum and
// the product) is computed once per tile and read twice.
// CHECK-LABEL: func.func @multi_use
// CHECK:       tilefuse.tile_grid
// CHECK:         %[[X:.*]] = tilefuse.load
// CHECK-COUNT-1: math.tanh
// CHECK-NOT:     math.tanh
// CHECK:         tilefuse.store
// CHECK:         tilefuse.store
func.func @multi_use(%x: tensor<64x128xf32>) -> (tensor<64x128xf32>, tensor<64x128xf32>) {
  %s, %p = tilefuse.group "fused_kernel_0" ins(%x : tensor<64x128xf32>) reason "pointwise: tanh + add + mul (3 ops)" attributes {cost = #tilefuse.cost<flops = 24576, fused_bytes = 98304, unfused_bytes = 262144, tc_flops = 0, sfu_ops = 8192, dtype = "f32">} {
  ^bb0(%0: tensor<64x128xf32>):
    %e = tensor.empty() : tensor<64x128xf32>
    %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%0 : tensor<64x128xf32>) outs(%e : tensor<64x128xf32>) {
    ^bb0(%a: f32, %o: f32):
      %r = math.tanh %a : f32
      linalg.yield %r : f32
    } -> tensor<64x128xf32>
    %s_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%t, %0 : tensor<64x128xf32>, tensor<64x128xf32>) outs(%e : tensor<64x128xf32>) {
    ^bb0(%a_1: f32, %b: f32, %o_1: f32):
      %r_1 = arith.addf %a_1, %b : f32
      linalg.yield %r_1 : f32
    } -> tensor<64x128xf32>
    %p_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%t, %0 : tensor<64x128xf32>, tensor<64x128xf32>) outs(%e : tensor<64x128xf32>) {
    ^bb0(%a_2: f32, %b_1: f32, %o_2: f32):
      %r_2 = arith.mulf %a_2, %b_1 : f32
      linalg.yield %r_2 : f32
    } -> tensor<64x128xf32>
    tilefuse.yield %s_1, %p_1 : tensor<64x128xf32>, tensor<64x128xf32>
  } -> (tensor<64x128xf32>, tensor<64x128xf32>)
  func.return %s, %p : tensor<64x128xf32>, tensor<64x128xf32>
}

// -----

// Matmul + bias epilogue: K becomes a loop carrying the accumulator tile, the
// zero init before it, operands loaded per K chunk, the bias added after.
// CHECK-LABEL: func.func @linear
// CHECK:       tilefuse.tile_grid [{{[0-9]+}}, {{[0-9]+}}]
// CHECK:         %[[ZERO:.*]] = linalg.generic {{.*}} ins(%{{.*}} : f32)
// CHECK:         %[[ACC:.*]] = scf.for {{.*}} iter_args(%[[A:.*]] = %[[ZERO]])
// CHECK:           tilefuse.load %{{.*}} : tensor<100x200xf32> -> tensor<{{[0-9]+}}x32xf32>
// CHECK:           tilefuse.load %{{.*}} : tensor<200x80xf32> -> tensor<32x{{[0-9]+}}xf32>
// CHECK:           arith.mulf
// CHECK:           arith.addf
// CHECK:           scf.yield
// CHECK:         tilefuse.load %{{.*}} : tensor<80xf32>
// CHECK:         linalg.generic {{.*}} ins(%[[ACC]], %{{.*}} :
// CHECK:         tilefuse.store
func.func @linear(%x: tensor<100x200xf32>, %w: tensor<200x80xf32>, %b: tensor<80xf32>) -> tensor<100x80xf32> {
  %y = tilefuse.group "fused_kernel_0" ins(%x, %w, %b : tensor<100x200xf32>, tensor<200x80xf32>, tensor<80xf32>) reason "epilogue: matmul + add (3 ops)" attributes {cost = #tilefuse.cost<flops = 3208000, fused_bytes = 176320, unfused_bytes = 304320, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
  ^bb0(%0: tensor<100x200xf32>, %1: tensor<200x80xf32>, %2: tensor<80xf32>):
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<100x80xf32>
    %f = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%zero : f32) outs(%e : tensor<100x80xf32>) {
    ^bb0(%3: f32, %4: f32):
      linalg.yield %3 : f32
    } -> tensor<100x80xf32>
    %m = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%0, %1 : tensor<100x200xf32>, tensor<200x80xf32>) outs(%f : tensor<100x80xf32>) {
    ^bb0(%5: f32, %6: f32, %7: f32):
      %8 = arith.mulf %5, %6 : f32
      %9 = arith.addf %7, %8 : f32
      linalg.yield %9 : f32
    } -> tensor<100x80xf32>
    %y_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%m, %2 : tensor<100x80xf32>, tensor<80xf32>) outs(%e : tensor<100x80xf32>) {
    ^bb0(%a: f32, %c: f32, %o: f32):
      %r = arith.addf %a, %c : f32
      linalg.yield %r : f32
    } -> tensor<100x80xf32>
    tilefuse.yield %y_1 : tensor<100x80xf32>
  } -> (tensor<100x80xf32>)
  func.return %y : tensor<100x80xf32>
}

// -----

// An embedding lookup: the payload gathers table[ids[i], j] from the group's
// argument. Lanes past the tile's extent (5 rows and 13 columns in an 8 x 16
// tile) compute indices nobody stores; every gather index is clamped into its
// dim, so each program reads inside the table. The clamps are marked
// `tilefuse.edge_clamp`: the printer masks the load to the dim instead.
// CHECK-LABEL: func.func @lookup
// CHECK:      ^bb0(%{{.*}}: tensor<5xi64>, %[[TABLE:.*]]: tensor<11x13xf32>):
// CHECK:        tilefuse.tile_grid [1, 1]
// CHECK:          linalg.generic {{.*}} ins(%{{.*}} : tensor<8xi64>) outs(%{{.*}} : tensor<8x16xf32>)
// CHECK:            %[[ROW:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK:            %[[COL:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK-DAG:        %[[R0:.*]] = arith.constant 0 : index
// CHECK-DAG:        %[[R10:.*]] = arith.constant 10 : index
// CHECK:            %[[RLO:.*]] = arith.maxsi %[[ROW]], %[[R0]] : index
// CHECK:            %[[RIN:.*]] = arith.minsi %[[RLO]], %[[R10]] {tilefuse.edge_clamp} : index
// CHECK-DAG:        %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:        %[[C12:.*]] = arith.constant 12 : index
// CHECK:            %[[CLO:.*]] = arith.maxsi %[[COL]], %[[C0]] : index
// CHECK:            %[[CIN:.*]] = arith.minsi %[[CLO]], %[[C12]] {tilefuse.edge_clamp} : index
// CHECK:            tensor.extract %[[TABLE]][%[[RIN]], %[[CIN]]] : tensor<11x13xf32>
func.func @lookup(%table: tensor<11x13xf32>, %ids: tensor<5xi64>) -> tensor<5x13xf32> {
  %0 = tilefuse.group "fused_kernel_0" ins(%ids, %table : tensor<5xi64>, tensor<11x13xf32>) reason "pointwise: gather (1 ops)" attributes {cost = #tilefuse.cost<flops = 0, fused_bytes = 560, unfused_bytes = 560, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
  ^bb0(%1: tensor<5xi64>, %2: tensor<11x13xf32>):
    %3 = tensor.empty() : tensor<5x13xf32>
    %4 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%1 : tensor<5xi64>) outs(%3 : tensor<5x13xf32>) {
    ^bb0(%in: i64, %out: f32):
      %row = arith.index_cast %in : i64 to index
      %col = linalg.index 1 : index
      %v = tensor.extract %2[%row, %col] : tensor<11x13xf32>
      linalg.yield %v : f32
    } -> tensor<5x13xf32>
    tilefuse.yield %4 : tensor<5x13xf32>
  } -> (tensor<5x13xf32>)
  func.return %0 : tensor<5x13xf32>
}

// -----

// A gather whose column index (k mod 4) value_range proves inside its dim and that
// reads no partial loop (8 columns, one whole tile) is marked in bounds on that axis
// (the printer neither clamps nor masks it: contiguous lanes stay vector loads); the
// row index reads the partial row loop (5 rows in an 8-row tile) and is clamped.
// CHECK-LABEL: func.func @rotate_rows
// CHECK:            %[[L:.*]] = arith.remsi %{{.*}}, %{{.*}} : index
// CHECK:            %[[RLO:.*]] = arith.maxsi %{{.*}}, %{{.*}} : index
// CHECK:            %[[RIN:.*]] = arith.minsi %[[RLO]], %{{.*}} {tilefuse.edge_clamp} : index
// CHECK:            tensor.extract %{{.*}}[%[[RIN]], %[[L]]] {tilefuse.in_bounds_axes = array<i64: 1>} : tensor<5x8xf32>
func.func @rotate_rows(%x: tensor<5x8xf32>) -> tensor<5x8xf32> {
  %0 = tilefuse.group "fused_kernel_0" ins(%x : tensor<5x8xf32>) reason "pointwise: gather (1 ops)" attributes {cost = #tilefuse.cost<flops = 0, fused_bytes = 320, unfused_bytes = 320, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
  ^bb0(%1: tensor<5x8xf32>):
    %2 = tensor.empty() : tensor<5x8xf32>
    %3 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%2 : tensor<5x8xf32>) {
    ^bb0(%out: f32):
      %i = linalg.index 0 : index
      %k = linalg.index 1 : index
      %c4 = arith.constant 4 : index
      %l = arith.remsi %k, %c4 : index
      %v = tensor.extract %1[%i, %l] : tensor<5x8xf32>
      linalg.yield %v : f32
    } -> tensor<5x8xf32>
    tilefuse.yield %3 : tensor<5x8xf32>
  } -> (tensor<5x8xf32>)
  func.return %0 : tensor<5x8xf32>
}

// -----

// A softmax row longer than the budget: one online loop (running max, rescaled
// sum), then a second loop storing exp(x - m) / sum. The loop's exponentials,
// exp(x - m) and the rescale exp(m_old - m), read nothing but the row's sum:
// marked `tilefuse.softmax_exp` (the printer may flush their subnormal results);
// the stored one is not.
// LOOP-LABEL: func.func @long_softmax
// LOOP:         scf.for
// LOOP:           math.exp %{{.*}} {tilefuse.softmax_exp} : f32
// LOOP:           math.exp %{{.*}} {tilefuse.softmax_exp} : f32
// LOOP:           scf.yield
// LOOP:         scf.for
// LOOP:           math.exp %{{.*}} : f32
// LOOP-NOT:       tilefuse.softmax_exp
// LOOP:           tilefuse.store
func.func @long_softmax(%x: tensor<37x3000xf32>) -> tensor<37x3000xf32> {
  %y = tilefuse.group "fused_kernel_0" ins(%x : tensor<37x3000xf32>) reason "reduction: reduce_maximum + sub + reduce_add + div (6 ops)" attributes {cost = #tilefuse.cost<flops = 555000, fused_bytes = 888000, unfused_bytes = 2665184, tc_flops = 0, sfu_ops = 222000, dtype = "f32">} {
  ^bb0(%0: tensor<37x3000xf32>):
    %ninf = arith.constant 0xff800000 : f32
    %er = tensor.empty() : tensor<37xf32>
    %fm = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%ninf : f32) outs(%er : tensor<37xf32>) {
    ^bb0(%1: f32, %2: f32):
      linalg.yield %1 : f32
    } -> tensor<37xf32>
    %m = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%0 : tensor<37x3000xf32>) outs(%fm : tensor<37xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %v = arith.maximumf %in, %acc : f32
      linalg.yield %v : f32
    } -> tensor<37xf32>
    %e = tensor.empty() : tensor<37x3000xf32>
    %ex = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%0, %m : tensor<37x3000xf32>, tensor<37xf32>) outs(%e : tensor<37x3000xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %d = arith.subf %a, %b : f32
      %r = math.exp %d : f32
      linalg.yield %r : f32
    } -> tensor<37x3000xf32>
    %zero = arith.constant 0.000000e+00 : f32
    %fs = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%zero : f32) outs(%er : tensor<37xf32>) {
    ^bb0(%3: f32, %4: f32):
      linalg.yield %3 : f32
    } -> tensor<37xf32>
    %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%ex : tensor<37x3000xf32>) outs(%fs : tensor<37xf32>) {
    ^bb0(%in_1: f32, %acc_1: f32):
      %v_1 = arith.addf %in_1, %acc_1 : f32
      linalg.yield %v_1 : f32
    } -> tensor<37xf32>
    %y_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%ex, %s : tensor<37x3000xf32>, tensor<37xf32>) outs(%e : tensor<37x3000xf32>) {
    ^bb0(%a_1: f32, %b_1: f32, %o_1: f32):
      %r_1 = arith.divf %a_1, %b_1 : f32
      linalg.yield %r_1 : f32
    } -> tensor<37x3000xf32>
    tilefuse.yield %y_1 : tensor<37x3000xf32>
  } -> (tensor<37x3000xf32>)
  func.return %y : tensor<37x3000xf32>
}
