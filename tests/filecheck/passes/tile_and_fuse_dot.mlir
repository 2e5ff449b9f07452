// RUN: tilefuse-opt %s --split-input-file -p 'tile-and-fuse' | filecheck %s
// RUN: tilefuse-opt %s --split-input-file -p 'tile-and-fuse{allow_tf32=true}' | filecheck %s --check-prefix=TF32

// The tl.dot dtype of a tile plan (analysis/dot.py): products of two bf16 values
// (widened by extf in the payload, as fold-operand-extf leaves torch-mlir's bf16
// Linear) are exact in f32, so the dot is bf16, and stays bf16 with allow_tf32.
// The working set counts both operand tiles at 2 bytes; K is whole (one trip of the
// loop), so Triton does not pipeline it: one tile each, (16x64 + 64x32) x 2 = 6144
// bytes (budget.contraction_smem); one K step, so the tiles are scored by tile
// efficiency x resident programs (tile_plan._single_k_step).
// CHECK-LABEL: func.func @bf16_factors
// CHECK:       tilefuse.tile_grid {{.*}} blocks = [16, 32, 64], {{.*}} working_set = 6144, {{.*}} dot = "bf16"
// CHECK:         tilefuse.load %{{.*}} : tensor<32x48xbf16> -> tensor<16x64xbf16>
// CHECK:         tilefuse.load %{{.*}} : tensor<40x48xbf16> -> tensor<32x64xbf16>
// TF32-LABEL:  func.func @bf16_factors
// TF32:        dot = "bf16"
func.func @bf16_factors(%x: tensor<32x48xbf16>, %w: tensor<40x48xbf16>) -> tensor<32x40xf32> {
  %y = tilefuse.group "fused_kernel_0" ins(%x, %w : tensor<32x48xbf16>, tensor<40x48xbf16>) reason "epilogue: matmul (2 ops)" attributes {cost = #tilefuse.cost<flops = 122880, fused_bytes = 12032, unfused_bytes = 22272, tc_flops = 122880, sfu_ops = 0, dtype = "bf16">} {
  ^bb0(%0: tensor<32x48xbf16>, %1: tensor<40x48xbf16>):
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<32x40xf32>
    %i = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%zero : f32) outs(%e : tensor<32x40xf32>) {
    ^bb0(%2: f32, %3: f32):
      linalg.yield %2 : f32
    } -> tensor<32x40xf32>
    %y_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%0, %1 : tensor<32x48xbf16>, tensor<40x48xbf16>) outs(%i : tensor<32x40xf32>) {
    ^bb0(%a: bf16, %b: bf16, %c: f32):
      %af = arith.extf %a : bf16 to f32
      %bf = arith.extf %b : bf16 to f32
      %m = arith.mulf %af, %bf : f32
      %r = arith.addf %c, %m : f32
      linalg.yield %r : f32
    } -> tensor<32x40xf32>
    tilefuse.yield %y_1 : tensor<32x40xf32>
  } -> (tensor<32x40xf32>)
  func.return %y : tensor<32x40xf32>
}

// -----

// A bf16 factor times a genuine f32 one: not a product of two 16-bit values, so
// the dot stays f32 (IEEE), TF32 only when asked for. The bf16 tile is loaded (and
// counted) at 2 bytes, the f32 one at 4. The bf16 tile is converted in registers:
// 3 (stages - 1) buffers of it at 2 bytes, the f32 tile 4 stages at 4 bytes, and
// one converted tile in the dot's f32: 3 x 1024 + 4 x 2048 + 2048 = 13312 (16384 for
// two f32 operands, below: 4 x (2048 + 2048); budget.contraction_smem).
// CHECK-LABEL: func.func @bf16_times_f32
// CHECK:       tilefuse.tile_grid {{.*}} blocks = [16, 16, 32], {{.*}} working_set = 13312, {{.*}} dot = "f32"
// CHECK:         tilefuse.load %{{.*}} : tensor<32x48xbf16> -> tensor<16x32xbf16>
// CHECK:         tilefuse.load %{{.*}} : tensor<48x40xf32> -> tensor<32x16xf32>
// TF32-LABEL:  func.func @bf16_times_f32
// TF32:        dot = "tf32"
func.func @bf16_times_f32(%x: tensor<32x48xbf16>, %w: tensor<48x40xf32>) -> tensor<32x40xf32> {
  %y = tilefuse.group "fused_kernel_0" ins(%x, %w : tensor<32x48xbf16>, tensor<48x40xf32>) reason "epilogue: matmul (2 ops)" attributes {cost = #tilefuse.cost<flops = 122880, fused_bytes = 15872, unfused_bytes = 26112, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
  ^bb0(%0: tensor<32x48xbf16>, %1: tensor<48x40xf32>):
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<32x40xf32>
    %i = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%zero : f32) outs(%e : tensor<32x40xf32>) {
    ^bb0(%2: f32, %3: f32):
      linalg.yield %2 : f32
    } -> tensor<32x40xf32>
    %y_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%0, %1 : tensor<32x48xbf16>, tensor<48x40xf32>) outs(%i : tensor<32x40xf32>) {
    ^bb0(%4: bf16, %5: f32, %6: f32):
      %7 = arith.extf %4 : bf16 to f32
      %8 = arith.mulf %7, %5 : f32
      %9 = arith.addf %6, %8 : f32
      linalg.yield %9 : f32
    } -> tensor<32x40xf32>
    tilefuse.yield %y_1 : tensor<32x40xf32>
  } -> (tensor<32x40xf32>)
  func.return %y : tensor<32x40xf32>
}

// -----

// Genuinely f32 operands: an IEEE f32 dot by default, TF32 with allow_tf32.
// CHECK-LABEL: func.func @f32_factors
// CHECK:       working_set = 16384, {{.*}} dot = "f32"
// TF32-LABEL:  func.func @f32_factors
// TF32:        dot = "tf32"
func.func @f32_factors(%x: tensor<32x48xf32>, %w: tensor<48x40xf32>) -> tensor<32x40xf32> {
  %y = tilefuse.group "fused_kernel_1" ins(%x, %w : tensor<32x48xf32>, tensor<48x40xf32>) reason "epilogue: matmul (2 ops)" attributes {cost = #tilefuse.cost<flops = 122880, fused_bytes = 18944, unfused_bytes = 29184, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
  ^bb0(%0: tensor<32x48xf32>, %1: tensor<48x40xf32>):
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<32x40xf32>
    %i = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%zero : f32) outs(%e : tensor<32x40xf32>) {
    ^bb0(%2: f32, %3: f32):
      linalg.yield %2 : f32
    } -> tensor<32x40xf32>
    %y_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%0, %1 : tensor<32x48xf32>, tensor<48x40xf32>) outs(%i : tensor<32x40xf32>) {
    ^bb0(%4: f32, %5: f32, %6: f32):
      %7 = arith.mulf %4, %5 : f32
      %8 = arith.addf %6, %7 : f32
      linalg.yield %8 : f32
    } -> tensor<32x40xf32>
    tilefuse.yield %y_1 : tensor<32x40xf32>
  } -> (tensor<32x40xf32>)
  func.return %y : tensor<32x40xf32>
}
