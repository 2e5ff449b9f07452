// RUN: tilefuse-opt %s -p fold-asserts --split-input-file | filecheck %s

// torch-mlir's BatchNorm in eval mode: 1 / sqrt(running_var + eps), guarded by
// `sqrt(...) != 0`. The buffer `%var` carries the range fact `torch/buffers.py`
// checked on the host (every element finite, in [0.5, 2]): var + eps >= 0.5 > 0
// after any rounding, so sqrt > 0 and the check always holds: erased with the
// compare; the reciprocal it guarded stays.
// CHECK-LABEL: func.func @batchnorm_var
// CHECK:       math.sqrt
// CHECK-NOT:   cf.assert
// CHECK-NOT:   arith.cmpf
// CHECK:       arith.divf
// CHECK:       func.return
func.func @batchnorm_var(%var: tensor<8xbf16> {tilefuse.range = [5.000000e-01 : f64, 2.000000e+00 : f64]}) -> tensor<8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %eps = arith.constant 1.000000e-05 : f64
  %e = tensor.empty() : tensor<8xf32>
  %ext = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%var : tensor<8xbf16>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %x = arith.extf %in : bf16 to f32
    linalg.yield %x : f32
  } -> tensor<8xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%ext : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %eps32 = arith.truncf %eps : f64 to f32
    %x = arith.addf %in, %eps32 : f32
    linalg.yield %x : f32
  } -> tensor<8xf32>
  %root = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%sum : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %x = math.sqrt %in : f32
    linalg.yield %x : f32
  } -> tensor<8xf32>
  %rec = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%root : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %ne = arith.cmpf one, %in, %zero : f32
    cf.assert %ne, "unimplemented: tensor with zero element"
    %x = arith.divf %one, %in : f32
    linalg.yield %x : f32
  } -> tensor<8xf32>
  func.return %rec : tensor<8xf32>
}

// -----

// A variance of exactly 0 (an untrained channel, or a fresh buffer): 0 + eps is
// the f32 of 1e-5 rounded either way, still > 0, so the check goes. The range is
// the exact float the host found, printed to round-trip.
// CHECK-LABEL: func.func @zero_var
// CHECK-NOT:   cf.assert
// CHECK:       func.return
func.func @zero_var(%var: tensor<8xf32> {tilefuse.range = [0.000000e+00 : f64, 1.00000000000000000e+00 : f64]}) -> tensor<8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %eps = arith.constant 1.000000e-05 : f64
  %e = tensor.empty() : tensor<8xf32>
  %rec = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%var : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %eps32 = arith.truncf %eps : f64 to f32
    %s = arith.addf %in, %eps32 : f32
    %r = math.sqrt %s : f32
    %ne = arith.cmpf une, %r, %zero : f32
    cf.assert %ne, "unimplemented: tensor with zero element"
    %x = arith.divf %one, %r : f32
    linalg.yield %x : f32
  } -> tensor<8xf32>
  func.return %rec : tensor<8xf32>
}

// -----

// The range reaches below -eps (a variance written negative): var + eps may be
// 0 or negative, sqrt 0 or NaN, so the check is not proved and stays for the
// kernel; nor is it disproved (some elements may pass), so no error.
// CHECK-LABEL: func.func @negative_var
// CHECK:       cf.assert %{{.*}}, "unimplemented: tensor with zero element"
// CHECK:       func.return
func.func @negative_var(%var: tensor<8xf32> {tilefuse.range = [-1.000000e-03 : f64, 1.000000e+00 : f64]}) -> tensor<8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %eps = arith.constant 1.000000e-05 : f32
  %e = tensor.empty() : tensor<8xf32>
  %rec = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%var : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %eps : f32
    %r = math.sqrt %s : f32
    %ne = arith.cmpf one, %r, %zero : f32
    cf.assert %ne, "unimplemented: tensor with zero element"
    %x = arith.divf %one, %r : f32
    linalg.yield %x : f32
  } -> tensor<8xf32>
  func.return %rec : tensor<8xf32>
}

// -----

// Every element exactly -eps: -f32(1e-5) + f32(1e-5) = 0 and sqrt(0) = 0 fail
// the check on every element. Not a compile error (a disproof uses no argument
// fact: the buffer may be written before the first call): the check stays.
// CHECK-LABEL: func.func @minus_eps
// CHECK:       cf.assert %{{.*}}, "unimplemented: tensor with zero element"
func.func @minus_eps(%var: tensor<8xf32> {tilefuse.range = [-9.99999974737875163e-06 : f64, -9.99999974737875163e-06 : f64]}) -> tensor<8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %eps = arith.constant 1.000000e-05 : f32
  %e = tensor.empty() : tensor<8xf32>
  %rec = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%var : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %eps : f32
    %r = math.sqrt %s : f32
    %ne = arith.cmpf one, %r, %zero : f32
    cf.assert %ne, "unimplemented: tensor with zero element"
    linalg.yield %r : f32
  } -> tensor<8xf32>
  func.return %rec : tensor<8xf32>
}

// -----

// No range fact on the argument: nothing is known of a function argument.
// CHECK-LABEL: func.func @no_fact
// CHECK:       cf.assert %{{.*}}, "unimplemented: tensor with zero element"
func.func @no_fact(%var: tensor<8xf32>) -> tensor<8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %eps = arith.constant 1.000000e-05 : f32
  %e = tensor.empty() : tensor<8xf32>
  %rec = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%var : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %eps : f32
    %r = math.sqrt %s : f32
    %ne = arith.cmpf one, %r, %zero : f32
    cf.assert %ne, "unimplemented: tensor with zero element"
    linalg.yield %r : f32
  } -> tensor<8xf32>
  func.return %rec : tensor<8xf32>
}
