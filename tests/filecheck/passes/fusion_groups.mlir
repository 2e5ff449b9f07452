// RUN: tilefuse-opt %s --split-input-file -p fusion-groups | filecheck %s

// relu(x + y): one group, fused traffic 3N x 4 B, unfused 5N x 4 B.
// CHECK-LABEL: func.func @relu_add
// CHECK:      %[[Z:.*]] = tilefuse.group "fused_kernel_0" ins(%{{.*}}, %{{.*}} : tensor<1000xf32>, tensor<1000xf32>) reason "pointwise: add + maximum (2 ops)" attributes {cost = #tilefuse.cost<flops = 2000, fused_bytes = 12000, unfused_bytes = 20000, tc_flops = 0, sfu_ops = 0, dtype = "f32">}
// CHECK:        arith.addf
// CHECK:        arith.maximumf
// CHECK:        tilefuse.yield
// CHECK:      func.return %[[Z]]
func.func @relu_add(%x: tensor<1000xf32>, %y: tensor<1000xf32>) -> tensor<1000xf32> {
  %e = tensor.empty() : tensor<1000xf32>
  %zero = arith.constant 0.000000e+00 : f32
  %s = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x, %y : tensor<1000xf32>, tensor<1000xf32>) outs(%e : tensor<1000xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1000xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%s : tensor<1000xf32>) outs(%e : tensor<1000xf32>) {
  ^bb0(%a_1: f32, %o_1: f32):
    %r_1 = arith.maximumf %a_1, %zero : f32
    linalg.yield %r_1 : f32
  } -> tensor<1000xf32>
  func.return %z : tensor<1000xf32>
}

// -----

// A matmul never absorbs its operand's producer: two groups, the first one's
// result read by the second.
// CHECK-LABEL: func.func @prologue_refused
// CHECK:      %[[T:.*]] = tilefuse.group "fused_kernel_0" ins(%{{.*}} : tensor<64x32xf32>) reason "pointwise: tanh (1 ops)"
// CHECK:      %[[M:.*]] = tilefuse.group "fused_kernel_1" ins(%[[T]], %{{.*}} : tensor<64x32xf32>, tensor<32x16xf32>) reason "epilogue: matmul (2 ops)"
// CHECK:      func.return %[[M]]
func.func @prologue_refused(%x: tensor<64x32xf32>, %w: tensor<32x16xf32>) -> tensor<64x16xf32> {
  %e = tensor.empty() : tensor<64x32xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.tanh %a : f32
    linalg.yield %r : f32
  } -> tensor<64x32xf32>
  %zero = arith.constant 0.000000e+00 : f32
  %em = tensor.empty() : tensor<64x16xf32>
  %f = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%zero : f32) outs(%em : tensor<64x16xf32>) {
  ^bb0(%0: f32, %1: f32):
    linalg.yield %0 : f32
  } -> tensor<64x16xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%t, %w : tensor<64x32xf32>, tensor<32x16xf32>) outs(%f : tensor<64x16xf32>) {
  ^bb0(%2: f32, %3: f32, %4: f32):
    %5 = arith.mulf %2, %3 : f32
    %6 = arith.addf %4, %5 : f32
    linalg.yield %6 : f32
  } -> tensor<64x16xf32>
  func.return %m : tensor<64x16xf32>
}

// -----

// A payload's tensor.extract at computed indices (a gather, exp(x)[i, t_i])
// reads a tensor from memory: exp is a kernel of its own, never fused into the
// generic that gathers from it (even though that generic also reads exp's
// result elementwise), and the gathered tensor is an input of the gathering
// group, read whole by it anyway: its cost counts exp(x) once (7 x 10 x 4 B).
// CHECK-LABEL: func.func @gather_from_an_operand
// CHECK:      %[[Y:.*]] = tilefuse.group "fused_kernel_0" ins(%{{.*}} : tensor<7x10xf32>) reason "pointwise: exp (1 ops)"
// CHECK:      %[[R:.*]] = tilefuse.group "fused_kernel_1" ins(%[[Y]], %{{.*}} : tensor<7x10xf32>, tensor<7xi64>) reason "pointwise: gather (1 ops)" attributes {cost = #tilefuse.cost<flops = 70, fused_bytes = 616, unfused_bytes = 616,
// CHECK:      ^bb0(%[[YA:.*]]: tensor<7x10xf32>, %{{.*}}: tensor<7xi64>):
// CHECK:        tensor.extract %[[YA]][%{{.*}}, %{{.*}}] : tensor<7x10xf32>
// CHECK:      func.return %[[R]]
func.func @gather_from_an_operand(%x: tensor<7x10xf32>, %t: tensor<7xi64>) -> tensor<7x10xf32> {
  %0 = tensor.empty() : tensor<7x10xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<7x10xf32>) outs(%0 : tensor<7x10xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  } -> tensor<7x10xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%y, %t : tensor<7x10xf32>, tensor<7xi64>) outs(%0 : tensor<7x10xf32>) {
  ^bb0(%in: f32, %target: i64, %out: f32):
    %i = linalg.index 0 : index
    %j = arith.index_cast %target : i64 to index
    %picked = tensor.extract %y[%i, %j] : tensor<7x10xf32>
    %d = arith.subf %in, %picked : f32
    linalg.yield %d : f32
  } -> tensor<7x10xf32>
  func.return %r : tensor<7x10xf32>
}

// -----

// An op reading a pointwise result along two loops (y[j] - y[i]) fuses with
// it: tile-and-fuse computes exp once per read, and the cost counts both
// (flops 2025 + 2 x 45, sfu_ops 2 x 45).
// CHECK-LABEL: func.func @exp_read_twice
// CHECK:       tilefuse.group "fused_kernel_0" ins(%{{.*}} : tensor<45xf32>) reason "pointwise: exp + sub (2 ops)" attributes {cost = #tilefuse.cost<flops = 2115, fused_bytes = 8280, unfused_bytes = 8820, tc_flops = 0, sfu_ops = 90, dtype = "f32">}
// CHECK-NOT:   tilefuse.group
func.func @exp_read_twice(%x: tensor<45xf32>) -> tensor<45x45xf32> {
  %e1 = tensor.empty() : tensor<45xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<45xf32>) outs(%e1 : tensor<45xf32>) {
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
  func.return %d : tensor<45x45xf32>
}

// -----

// A cast leaving its group is recomputed by its reader (torch-mlir's LayerNorm
// widens the residual sum to f64 for var_mean): the matmul epilogue stays f32
// and stores the f32 sum once (32 x 64 x 4 B), and the row sum reads it and
// widens it itself; no f64 copy is written.
// CHECK-LABEL: func.func @matmul_add_extf_f64_sum
// CHECK:      %[[S:.*]] = tilefuse.group "fused_kernel_0" ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<32x64xf32>, tensor<64x64xf32>, tensor<32x64xf32>) reason "epilogue: matmul + add (3 ops)" attributes {cost = #tilefuse.cost<flops = 264192, fused_bytes = 40960,
// CHECK-NOT:    arith.extf
// CHECK:        tilefuse.yield %{{.*}} : tensor<32x64xf32>
// CHECK-NEXT: } -> (tensor<32x64xf32>)
// CHECK:      %[[R:.*]] = tilefuse.group "fused_kernel_1" ins(%[[S]] : tensor<32x64xf32>) reason "reduction: ext + reduce_add (3 ops)" attributes {cost = #tilefuse.cost<flops = 2048, fused_bytes = 8448,
// CHECK:        arith.extf %{{.*}} : f32 to f64
// CHECK:        arith.addf %{{.*}}, %{{.*}} : f64
// CHECK:      func.return %[[R]]
func.func @matmul_add_extf_f64_sum(%x: tensor<32x64xf32>, %w: tensor<64x64xf32>, %r: tensor<32x64xf32>) -> tensor<32xf64> {
  %zero = arith.constant 0.000000e+00 : f32
  %em = tensor.empty() : tensor<32x64xf32>
  %f = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%zero : f32) outs(%em : tensor<32x64xf32>) {
  ^bb0(%0: f32, %1: f32):
    linalg.yield %0 : f32
  } -> tensor<32x64xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<32x64xf32>, tensor<64x64xf32>) outs(%f : tensor<32x64xf32>) {
  ^bb0(%2: f32, %3: f32, %4: f32):
    %5 = arith.mulf %2, %3 : f32
    %6 = arith.addf %4, %5 : f32
    linalg.yield %6 : f32
  } -> tensor<32x64xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%m, %r : tensor<32x64xf32>, tensor<32x64xf32>) outs(%em : tensor<32x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %7 = arith.addf %a, %b : f32
    linalg.yield %7 : f32
  } -> tensor<32x64xf32>
  %e64 = tensor.empty() : tensor<32x64xf64>
  %w64 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<32x64xf32>) outs(%e64 : tensor<32x64xf64>) {
  ^bb0(%c: f32, %o2: f64):
    %8 = arith.extf %c : f32 to f64
    linalg.yield %8 : f64
  } -> tensor<32x64xf64>
  %zero64 = arith.constant 0.000000e+00 : f64
  %er = tensor.empty() : tensor<32xf64>
  %fr = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%zero64 : f64) outs(%er : tensor<32xf64>) {
  ^bb0(%9: f64, %10: f64):
    linalg.yield %9 : f64
  } -> tensor<32xf64>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%w64 : tensor<32x64xf64>) outs(%fr : tensor<32xf64>) {
  ^bb0(%in: f64, %acc: f64):
    %11 = arith.addf %in, %acc : f64
    linalg.yield %11 : f64
  } -> tensor<32xf64>
  func.return %sum : tensor<32xf64>
}

// -----

// The f64 value is also returned: it is stored anyway, and the row sum reads it.
// CHECK-LABEL: func.func @returned_cast_stays
// CHECK:      %[[W:.*]] = tilefuse.group "fused_kernel_0" {{.*}} reason "epilogue: matmul + add + ext (4 ops)"
// CHECK:        tilefuse.yield %{{.*}} : tensor<32x64xf64>
// CHECK:      %[[R:.*]] = tilefuse.group "fused_kernel_1" ins(%[[W]] : tensor<32x64xf64>) reason "reduction: reduce_add (2 ops)"
// CHECK:      func.return %[[W]], %[[R]]
func.func @returned_cast_stays(%x: tensor<32x64xf32>, %w: tensor<64x64xf32>, %r: tensor<32x64xf32>) -> (tensor<32x64xf64>, tensor<32xf64>) {
  %zero = arith.constant 0.000000e+00 : f32
  %em = tensor.empty() : tensor<32x64xf32>
  %f = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%zero : f32) outs(%em : tensor<32x64xf32>) {
  ^bb0(%0: f32, %1: f32):
    linalg.yield %0 : f32
  } -> tensor<32x64xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<32x64xf32>, tensor<64x64xf32>) outs(%f : tensor<32x64xf32>) {
  ^bb0(%2: f32, %3: f32, %4: f32):
    %5 = arith.mulf %2, %3 : f32
    %6 = arith.addf %4, %5 : f32
    linalg.yield %6 : f32
  } -> tensor<32x64xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%m, %r : tensor<32x64xf32>, tensor<32x64xf32>) outs(%em : tensor<32x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %7 = arith.addf %a, %b : f32
    linalg.yield %7 : f32
  } -> tensor<32x64xf32>
  %e64 = tensor.empty() : tensor<32x64xf64>
  %w64 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<32x64xf32>) outs(%e64 : tensor<32x64xf64>) {
  ^bb0(%c: f32, %o2: f64):
    %8 = arith.extf %c : f32 to f64
    linalg.yield %8 : f64
  } -> tensor<32x64xf64>
  %zero64 = arith.constant 0.000000e+00 : f64
  %er = tensor.empty() : tensor<32xf64>
  %fr = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%zero64 : f64) outs(%er : tensor<32xf64>) {
  ^bb0(%9: f64, %10: f64):
    linalg.yield %9 : f64
  } -> tensor<32xf64>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%w64 : tensor<32x64xf64>) outs(%fr : tensor<32xf64>) {
  ^bb0(%in: f64, %acc: f64):
    %11 = arith.addf %in, %acc : f64
    linalg.yield %11 : f64
  } -> tensor<32xf64>
  func.return %w64, %sum : tensor<32x64xf64>, tensor<32xf64>
}

// -----

// A narrowing cast stays in its producer's group: storing the bf16 value is
// cheaper than storing the f32 one it casts, which no other kernel reads.
// CHECK-LABEL: func.func @narrowing_cast_stays
// CHECK:      %[[T:.*]] = tilefuse.group "fused_kernel_0" {{.*}} reason "epilogue: matmul + add + trunc (4 ops)"
// CHECK:        arith.truncf %{{.*}} : f32 to bf16
// CHECK:        tilefuse.yield %{{.*}} : tensor<32x64xbf16>
// CHECK:      tilefuse.group "fused_kernel_1" ins(%[[T]] : tensor<32x64xbf16>) reason "reduction: reduce_add (2 ops)"
func.func @narrowing_cast_stays(%x: tensor<32x64xf32>, %w: tensor<64x64xf32>, %r: tensor<32x64xf32>) -> tensor<32xf64> {
  %zero = arith.constant 0.000000e+00 : f32
  %em = tensor.empty() : tensor<32x64xf32>
  %f = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%zero : f32) outs(%em : tensor<32x64xf32>) {
  ^bb0(%0: f32, %1: f32):
    linalg.yield %0 : f32
  } -> tensor<32x64xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<32x64xf32>, tensor<64x64xf32>) outs(%f : tensor<32x64xf32>) {
  ^bb0(%2: f32, %3: f32, %4: f32):
    %5 = arith.mulf %2, %3 : f32
    %6 = arith.addf %4, %5 : f32
    linalg.yield %6 : f32
  } -> tensor<32x64xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%m, %r : tensor<32x64xf32>, tensor<32x64xf32>) outs(%em : tensor<32x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %7 = arith.addf %a, %b : f32
    linalg.yield %7 : f32
  } -> tensor<32x64xf32>
  %e64 = tensor.empty() : tensor<32x64xbf16>
  %w64 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<32x64xf32>) outs(%e64 : tensor<32x64xbf16>) {
  ^bb0(%c: f32, %o2: bf16):
    %8 = arith.truncf %c : f32 to bf16
    linalg.yield %8 : bf16
  } -> tensor<32x64xbf16>
  %zero64 = arith.constant 0.000000e+00 : f64
  %er = tensor.empty() : tensor<32xf64>
  %fr = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%zero64 : f64) outs(%er : tensor<32xf64>) {
  ^bb0(%9: f64, %10: f64):
    linalg.yield %9 : f64
  } -> tensor<32xf64>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%w64 : tensor<32x64xbf16>) outs(%fr : tensor<32xf64>) {
  ^bb0(%in: bf16, %acc: f64):
    %12 = arith.extf %in : bf16 to f64
    %11 = arith.addf %12, %acc : f64
    linalg.yield %11 : f64
  } -> tensor<32xf64>
  func.return %sum : tensor<32xf64>
}
