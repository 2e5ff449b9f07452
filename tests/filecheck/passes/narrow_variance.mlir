// RUN: tilefuse-opt %s --split-input-file -p narrow-variance | filecheck %s

// torch-mlir's `x.var(dim=-1)` of an f32 tensor: widened to f64, the mean, the
// squared deviations, their sum over n - 1, truncated back. All of it becomes f32 and
// reads %x itself; the truncation is gone.
// CHECK-LABEL: func.func @var
// CHECK-NOT:   f64
// CHECK:       %[[S:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x8xf32>) outs(%{{.*}} : tensor<4xf32>)
// CHECK:       %[[M:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<4xf32>)
// CHECK:         arith.divf %{{.*}}, %{{.*}} : f32
// CHECK:       %[[D:.*]] = linalg.generic {{.*}} ins(%x, %[[M]] : tensor<4x8xf32>, tensor<4xf32>)
// CHECK:         arith.subf
// CHECK:       %[[Q:.*]] = linalg.generic {{.*}} ins(%[[D]], %[[D]] : tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK:       %[[V:.*]] = linalg.generic {{.*}} ins(%[[Q]] : tensor<4x8xf32>) outs(%{{.*}} : tensor<4xf32>)
// The corrected two-pass form: sum d^2 - (sum d)^2 / n, at least 0.
// CHECK:       %[[L:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[D]] : tensor<4x8xf32>)
// CHECK:       %[[CV:.*]] = linalg.generic {{.*}} ins(%[[V]], %[[L]] : tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT:  ^{{.*}}(%[[SQ:.*]]: f32, %[[LIN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:    %[[L2:.*]] = arith.mulf %[[LIN]], %[[LIN]] : f32
// CHECK-NEXT:    %[[LN:.*]] = arith.divf %[[L2]], %{{.*}} : f32
// CHECK-NEXT:    %[[DIFF:.*]] = arith.subf %[[SQ]], %[[LN]] : f32
// CHECK-NEXT:    arith.maximumf %[[DIFF]], %{{.*}} : f32
// CHECK:       %[[C:.*]] = arith.constant 7.000000e+00 : f32
// CHECK-NEXT:  %[[R:.*]] = linalg.generic {{.*}} ins(%[[CV]] : tensor<4xf32>)
// CHECK-NEXT:  ^{{.*}}(%[[A:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:    %[[Y:.*]] = arith.divf %[[A]], %[[C]] : f32
// CHECK-NEXT:    linalg.yield %[[Y]] : f32
// CHECK:       func.return %[[R]] : tensor<4xf32>
func.func @var(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %zero = arith.constant 0.0 : f64
  %n1 = arith.constant 7.0 : f64
  %n = arith.constant 8.0 : f64
  %e0 = tensor.empty() : tensor<4x8xf64>
  %e = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%e0 : tensor<4x8xf64>) {
  ^bb0(%in: f32, %out: f64):
    %w = arith.extf %in : f32 to f64
    linalg.yield %w : f64
  } -> tensor<4x8xf64>
  %r0 = tensor.empty() : tensor<4xf64>
  %z = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%zero : f64) outs(%r0 : tensor<4xf64>) {
  ^bb0(%in: f64, %out: f64):
    linalg.yield %in : f64
  } -> tensor<4xf64>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%e : tensor<4x8xf64>) outs(%z : tensor<4xf64>) {
  ^bb0(%in: f64, %out: f64):
    %a = arith.addf %in, %out : f64
    linalg.yield %a : f64
  } -> tensor<4xf64>
  %m = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%s : tensor<4xf64>) outs(%r0 : tensor<4xf64>) {
  ^bb0(%in: f64, %out: f64):
    %q = arith.divf %in, %n : f64
    linalg.yield %q : f64
  } -> tensor<4xf64>
  %d = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%e, %m : tensor<4x8xf64>, tensor<4xf64>) outs(%e0 : tensor<4x8xf64>) {
  ^bb0(%a: f64, %b: f64, %out: f64):
    %t = arith.subf %a, %b : f64
    linalg.yield %t : f64
  } -> tensor<4x8xf64>
  %sq = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%d, %d : tensor<4x8xf64>, tensor<4x8xf64>) outs(%e0 : tensor<4x8xf64>) {
  ^bb0(%a: f64, %b: f64, %out: f64):
    %t = arith.mulf %a, %b : f64
    linalg.yield %t : f64
  } -> tensor<4x8xf64>
  %z2 = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%zero : f64) outs(%r0 : tensor<4xf64>) {
  ^bb0(%in: f64, %out: f64):
    linalg.yield %in : f64
  } -> tensor<4xf64>
  %v = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%sq : tensor<4x8xf64>) outs(%z2 : tensor<4xf64>) {
  ^bb0(%in: f64, %out: f64):
    %a = arith.addf %in, %out : f64
    linalg.yield %a : f64
  } -> tensor<4xf64>
  %vn = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%v : tensor<4xf64>) outs(%r0 : tensor<4xf64>) {
  ^bb0(%in: f64, %out: f64):
    %q = arith.divf %in, %n1 : f64
    linalg.yield %q : f64
  } -> tensor<4xf64>
  %o0 = tensor.empty() : tensor<4xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%vn : tensor<4xf64>) outs(%o0 : tensor<4xf32>) {
  ^bb0(%in: f64, %out: f32):
    %t = arith.truncf %in : f64 to f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  func.return %o : tensor<4xf32>
}

// -----

// The same variance spelled in fewer generics, of a bf16 input (widened to f32 now),
// with the program's own f32 mean beside it (a layer norm subtracts that one): the
// square of the deviation in one payload, the scaling and the truncation to bf16 in
// the reader. The variance's mean is the f32 mean (one sum of %x, not two); the sum
// of the deviations is a copy of the payload adding the deviation, not its square.
// CHECK-LABEL: func.func @fused_spelling
// CHECK-NOT:   f64
// CHECK:       %[[S:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x8xbf16>) outs(%{{.*}} : tensor<4xf32>)
// CHECK:         arith.extf %{{.*}} : bf16 to f32
// CHECK:       %[[M:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<4xf32>)
// CHECK-NOT:   iterator_types = ["parallel", "reduction"]} ins(%x :
// CHECK:       %[[V:.*]] = linalg.generic {{.*}} ins(%x, %[[M]] : tensor<4x8xbf16>, tensor<4xf32>) outs(%{{.*}} : tensor<4xf32>)
// CHECK:         %[[W:.*]] = arith.extf %{{.*}} : bf16 to f32
// CHECK-NEXT:    %[[DV:.*]] = arith.subf %[[W]], %{{.*}} : f32
// CHECK-NEXT:    %[[SQ:.*]] = arith.mulf %[[DV]], %[[DV]] : f32
// CHECK:       %[[L:.*]] = linalg.generic {{.*}} ins(%x, %[[M]] : tensor<4x8xbf16>, tensor<4xf32>) outs(%{{.*}} : tensor<4xf32>)
// CHECK:         %[[DL:.*]] = arith.subf
// CHECK-NEXT:    arith.addf %[[DL]], %{{.*}} : f32
// CHECK:       %[[CV:.*]] = linalg.generic {{.*}} ins(%[[V]], %[[L]] : tensor<4xf32>, tensor<4xf32>)
// CHECK:       %[[O:.*]] = linalg.generic {{.*}} ins(%[[CV]] : tensor<4xf32>) outs(%{{.*}} : tensor<4xbf16>)
// CHECK:         arith.divf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:    arith.truncf %{{.*}} : f32 to bf16
// CHECK:       func.return %[[O]], %[[M]]
func.func @fused_spelling(%x: tensor<4x8xbf16>) -> (tensor<4xbf16>, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f64
  %zero32 = arith.constant 0.0 : f32
  %n = arith.constant 8.0 : f64
  %n32 = arith.constant 8.0 : f32
  %r32 = tensor.empty() : tensor<4xf32>
  %z32 = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%zero32 : f32) outs(%r32 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4xf32>
  %s32 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x8xbf16>) outs(%z32 : tensor<4xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %w = arith.extf %in : bf16 to f32
    %a = arith.addf %w, %out : f32
    linalg.yield %a : f32
  } -> tensor<4xf32>
  %m32 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%s32 : tensor<4xf32>) outs(%r32 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %q = arith.divf %in, %n32 : f32
    linalg.yield %q : f32
  } -> tensor<4xf32>
  %r0 = tensor.empty() : tensor<4xf64>
  %z = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%zero : f64) outs(%r0 : tensor<4xf64>) {
  ^bb0(%in: f64, %out: f64):
    linalg.yield %in : f64
  } -> tensor<4xf64>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x8xbf16>) outs(%z : tensor<4xf64>) {
  ^bb0(%in: bf16, %out: f64):
    %w = arith.extf %in : bf16 to f64
    %a = arith.addf %w, %out : f64
    linalg.yield %a : f64
  } -> tensor<4xf64>
  %m = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%s : tensor<4xf64>) outs(%r0 : tensor<4xf64>) {
  ^bb0(%in: f64, %out: f64):
    %q = arith.divf %in, %n : f64
    linalg.yield %q : f64
  } -> tensor<4xf64>
  %z2 = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%zero : f64) outs(%r0 : tensor<4xf64>) {
  ^bb0(%in: f64, %out: f64):
    linalg.yield %in : f64
  } -> tensor<4xf64>
  %v = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x, %m : tensor<4x8xbf16>, tensor<4xf64>) outs(%z2 : tensor<4xf64>) {
  ^bb0(%in: bf16, %mean: f64, %out: f64):
    %w = arith.extf %in : bf16 to f64
    %dv = arith.subf %w, %mean : f64
    %sq = arith.mulf %dv, %dv : f64
    %a = arith.addf %sq, %out : f64
    linalg.yield %a : f64
  } -> tensor<4xf64>
  %o0 = tensor.empty() : tensor<4xbf16>
  %o = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%v : tensor<4xf64>) outs(%o0 : tensor<4xbf16>) {
  ^bb0(%in: f64, %out: bf16):
    %q = arith.divf %in, %n : f64
    %t = arith.truncf %q : f64 to bf16
    linalg.yield %t : bf16
  } -> tensor<4xbf16>
  func.return %o, %m32 : tensor<4xbf16>, tensor<4xf32>
}

// -----

// Left in f64: a sum of signed values not used as a mean (the f32 sum could cancel
// where the f64 one does not), a variance of f64 data, and a variance whose square
// root is taken before the truncation.
// CHECK-LABEL: func.func @kept
// CHECK:       arith.extf %{{.*}} : f32 to f64
// CHECK:       arith.truncf %{{.*}} : f64 to f32
// CHECK-LABEL: func.func @kept_f64_data
// CHECK:       arith.subf %{{.*}}, %{{.*}} : f64
// CHECK-LABEL: func.func @kept_sqrt
// CHECK:       math.sqrt %{{.*}} : f64
func.func @kept(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %zero = arith.constant 0.0 : f64
  %r0 = tensor.empty() : tensor<4xf64>
  %z = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%zero : f64) outs(%r0 : tensor<4xf64>) {
  ^bb0(%in: f64, %out: f64):
    linalg.yield %in : f64
  } -> tensor<4xf64>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x8xf32>) outs(%z : tensor<4xf64>) {
  ^bb0(%in: f32, %out: f64):
    %w = arith.extf %in : f32 to f64
    %a = arith.addf %w, %out : f64
    linalg.yield %a : f64
  } -> tensor<4xf64>
  %o0 = tensor.empty() : tensor<4xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%s : tensor<4xf64>) outs(%o0 : tensor<4xf32>) {
  ^bb0(%in: f64, %out: f32):
    %t = arith.truncf %in : f64 to f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  func.return %o : tensor<4xf32>
}
func.func @kept_f64_data(%x: tensor<4x8xf64>) -> tensor<4xf32> {
  %zero = arith.constant 0.0 : f64
  %n = arith.constant 8.0 : f64
  %r0 = tensor.empty() : tensor<4xf64>
  %z = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%zero : f64) outs(%r0 : tensor<4xf64>) {
  ^bb0(%in: f64, %out: f64):
    linalg.yield %in : f64
  } -> tensor<4xf64>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x8xf64>) outs(%z : tensor<4xf64>) {
  ^bb0(%in: f64, %out: f64):
    %a = arith.addf %in, %out : f64
    linalg.yield %a : f64
  } -> tensor<4xf64>
  %m = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%s : tensor<4xf64>) outs(%r0 : tensor<4xf64>) {
  ^bb0(%in: f64, %out: f64):
    %q = arith.divf %in, %n : f64
    linalg.yield %q : f64
  } -> tensor<4xf64>
  %z2 = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%zero : f64) outs(%r0 : tensor<4xf64>) {
  ^bb0(%in: f64, %out: f64):
    linalg.yield %in : f64
  } -> tensor<4xf64>
  %v = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x, %m : tensor<4x8xf64>, tensor<4xf64>) outs(%z2 : tensor<4xf64>) {
  ^bb0(%in: f64, %mean: f64, %out: f64):
    %dv = arith.subf %in, %mean : f64
    %sq = arith.mulf %dv, %dv : f64
    %a = arith.addf %sq, %out : f64
    linalg.yield %a : f64
  } -> tensor<4xf64>
  %o0 = tensor.empty() : tensor<4xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%v : tensor<4xf64>) outs(%o0 : tensor<4xf32>) {
  ^bb0(%in: f64, %out: f32):
    %t = arith.truncf %in : f64 to f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  func.return %o : tensor<4xf32>
}
func.func @kept_sqrt(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %zero = arith.constant 0.0 : f64
  %n = arith.constant 8.0 : f64
  %r0 = tensor.empty() : tensor<4xf64>
  %z = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%zero : f64) outs(%r0 : tensor<4xf64>) {
  ^bb0(%in: f64, %out: f64):
    linalg.yield %in : f64
  } -> tensor<4xf64>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x8xf32>) outs(%z : tensor<4xf64>) {
  ^bb0(%in: f32, %out: f64):
    %w = arith.extf %in : f32 to f64
    %a = arith.addf %w, %out : f64
    linalg.yield %a : f64
  } -> tensor<4xf64>
  %m = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%s : tensor<4xf64>) outs(%r0 : tensor<4xf64>) {
  ^bb0(%in: f64, %out: f64):
    %q = arith.divf %in, %n : f64
    linalg.yield %q : f64
  } -> tensor<4xf64>
  %z2 = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%zero : f64) outs(%r0 : tensor<4xf64>) {
  ^bb0(%in: f64, %out: f64):
    linalg.yield %in : f64
  } -> tensor<4xf64>
  %v = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x, %m : tensor<4x8xf32>, tensor<4xf64>) outs(%z2 : tensor<4xf64>) {
  ^bb0(%in: f32, %mean: f64, %out: f64):
    %w = arith.extf %in : f32 to f64
    %dv = arith.subf %w, %mean : f64
    %sq = arith.mulf %dv, %dv : f64
    %a = arith.addf %sq, %out : f64
    linalg.yield %a : f64
  } -> tensor<4xf64>
  %o0 = tensor.empty() : tensor<4xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%v : tensor<4xf64>) outs(%o0 : tensor<4xf32>) {
  ^bb0(%in: f64, %out: f32):
    %r = math.sqrt %in : f64
    %t = arith.truncf %r : f64 to f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  func.return %o : tensor<4xf32>
}

// -----

// A generic of the variance also reads f64 data from outside it (here unused by its
// payload): not narrowed, so that no f64 tensor is read as f32.
// CHECK-LABEL: func.func @reads_other_f64
// CHECK:       arith.subf %{{.*}}, %{{.*}} : f64
func.func @reads_other_f64(%x: tensor<4x8xf32>, %other: tensor<4x8xf64>) -> tensor<4xf32> {
  %zero = arith.constant 0.0 : f64
  %n = arith.constant 8.0 : f64
  %e0 = tensor.empty() : tensor<4x8xf64>
  %e = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%e0 : tensor<4x8xf64>) {
  ^bb0(%in: f32, %out: f64):
    %w = arith.extf %in : f32 to f64
    linalg.yield %w : f64
  } -> tensor<4x8xf64>
  %r0 = tensor.empty() : tensor<4xf64>
  %z = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%zero : f64) outs(%r0 : tensor<4xf64>) {
  ^bb0(%in: f64, %out: f64):
    linalg.yield %in : f64
  } -> tensor<4xf64>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%e : tensor<4x8xf64>) outs(%z : tensor<4xf64>) {
  ^bb0(%in: f64, %out: f64):
    %a = arith.addf %in, %out : f64
    linalg.yield %a : f64
  } -> tensor<4xf64>
  %m = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%s : tensor<4xf64>) outs(%r0 : tensor<4xf64>) {
  ^bb0(%in: f64, %out: f64):
    %q = arith.divf %in, %n : f64
    linalg.yield %q : f64
  } -> tensor<4xf64>
  %d = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%e, %m, %other : tensor<4x8xf64>, tensor<4xf64>, tensor<4x8xf64>) outs(%e0 : tensor<4x8xf64>) {
  ^bb0(%a: f64, %b: f64, %c: f64, %out: f64):
    %t = arith.subf %a, %b : f64
    linalg.yield %t : f64
  } -> tensor<4x8xf64>
  %z2 = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%zero : f64) outs(%r0 : tensor<4xf64>) {
  ^bb0(%in: f64, %out: f64):
    linalg.yield %in : f64
  } -> tensor<4xf64>
  %v = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%d : tensor<4x8xf64>) outs(%z2 : tensor<4xf64>) {
  ^bb0(%in: f64, %out: f64):
    %sq = arith.mulf %in, %in : f64
    %a = arith.addf %sq, %out : f64
    linalg.yield %a : f64
  } -> tensor<4xf64>
  %o0 = tensor.empty() : tensor<4xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%v : tensor<4xf64>) outs(%o0 : tensor<4xf32>) {
  ^bb0(%in: f64, %out: f32):
    %t = arith.truncf %in : f64 to f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  func.return %o : tensor<4xf32>
}
