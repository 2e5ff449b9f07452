// RUN: tilefuse-opt %s --split-input-file -p 'tile-and-fuse' | filecheck %s

// Masks read from a function argument with a mask fact (analysis/causal.py:
// tilefuse.zero_above / neg_inf_above / huge_above = c: every [.., i, j] with
// j - i > c is 0 / -inf / at most -2^120) end the online key loop at
// min(S, q0 + BQ + c), as a mask computed from the indices does.

// nanoGPT: a tril buffer whose elements above the diagonal are 0 (the argument's
// fact), read through a unit-dim collapse, compared == 0 and -inf where true: c = 0.
// CHECK-LABEL: func.func @tril_buffer
// CHECK:       tilefuse.tile_grid [1, 1, 4]
// CHECK-NEXT:  ^bb0(%{{.*}}: index, %{{.*}}: index, %[[PQ:.*]]: index, %{{.*}}: tensor<1x1x100x16xf32>):
// CHECK:         %[[Q0:.*]] = arith.muli %[[PQ]], %{{.*}} : index
// CHECK:         %[[S:.*]] = arith.constant 100 : index
// CHECK-NEXT:    %[[C:.*]] = arith.constant 32 : index
// CHECK-NEXT:    %[[LAST:.*]] = arith.addi %[[Q0]], %[[C]] : index
// CHECK-NEXT:    %[[END:.*]] = arith.minsi %[[S]], %[[LAST]] : index
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[END]] step %{{.*}} iter_args
builtin.module {
  func.func @tril_buffer(%q: tensor<1x1x100x16xf32>, %k: tensor<1x1x100x16xf32>, %v: tensor<1x1x100x16xf32>, %bias: tensor<1x1x100x100xf32> {tilefuse.zero_above = 0 : i64}) -> tensor<1x1x100x16xf32> {
    %b2 = tensor.collapse_shape %bias [[0, 1, 2], [3]] : tensor<1x1x100x100xf32> into tensor<100x100xf32>
    %o = tilefuse.group "fused_kernel_0" ins(%q, %k, %v, %b2 : tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>, tensor<100x100xf32>) reason "flash-attention: matmul + cmpi + reduce_maximum + sub + reduce_add + matmul + div (11 ops)" attributes {cost = #tilefuse.cost<flops = 691600, fused_bytes = 25600, unfused_bytes = 454400, tc_flops = 0, sfu_ops = 11600, dtype = "f32">} {
    ^bb0(%0: tensor<1x1x100x16xf32>, %1: tensor<1x1x100x16xf32>, %2: tensor<1x1x100x16xf32>, %bm: tensor<100x100xf32>):
      %zero = arith.constant 0.000000e+00 : f32
      %se = tensor.empty() : tensor<1x1x100x100xf32>
      %si = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%se : tensor<1x1x100x100xf32>) {
      ^bb0(%3: f32, %4: f32):
        linalg.yield %3 : f32
      } -> tensor<1x1x100x100xf32>
      %scores = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%0, %1 : tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>) outs(%si : tensor<1x1x100x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%a: f32, %c: f32, %acc: f32):
        %p = arith.mulf %a, %c : f32
        %sum = arith.addf %acc, %p : f32
        linalg.yield %sum : f32
      } -> tensor<1x1x100x100xf32>
      %scale = arith.constant 2.500000e-01 : f32
      %neg_inf = arith.constant 0xff800000 : f32
      %ze = tensor.empty() : tensor<100x100xi1>
      %zm = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%bm : tensor<100x100xf32>) outs(%ze : tensor<100x100xi1>) {
      ^bb0(%bv: f32, %bo: i1):
        %bz = arith.cmpf oeq, %bv, %zero : f32
        linalg.yield %bz : i1
      } -> tensor<100x100xi1>
      %scaled = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scores, %zm : tensor<1x1x100x100xf32>, tensor<100x100xi1>) outs(%se : tensor<1x1x100x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%sv: f32, %z: i1, %out: f32):
        %r = arith.mulf %sv, %scale : f32
        %m = arith.select %z, %neg_inf, %r : f32
        linalg.yield %m : f32
      } -> tensor<1x1x100x100xf32>
      %re = tensor.empty() : tensor<1x1x100xf32>
      %mi = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%neg_inf : f32) outs(%re : tensor<1x1x100xf32>) {
      ^bb0(%5: f32, %6: f32):
        linalg.yield %5 : f32
      } -> tensor<1x1x100xf32>
      %mx = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%scaled : tensor<1x1x100x100xf32>) outs(%mi : tensor<1x1x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%in: f32, %a_1: f32):
        %r_1 = arith.maximumf %in, %a_1 : f32
        linalg.yield %r_1 : f32
      } -> tensor<1x1x100xf32>
      %ex = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scaled, %mx : tensor<1x1x100x100xf32>, tensor<1x1x100xf32>) outs(%se : tensor<1x1x100x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%x: f32, %m_1: f32, %out_1: f32):
        %dd = arith.subf %x, %m_1 : f32
        %e = math.exp %dd : f32
        linalg.yield %e : f32
      } -> tensor<1x1x100x100xf32>
      %zi = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%re : tensor<1x1x100xf32>) {
      ^bb0(%7: f32, %8: f32):
        linalg.yield %7 : f32
      } -> tensor<1x1x100xf32>
      %l = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x1x100x100xf32>) outs(%zi : tensor<1x1x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%in_1: f32, %a_2: f32):
        %r_2 = arith.addf %in_1, %a_2 : f32
        linalg.yield %r_2 : f32
      } -> tensor<1x1x100xf32>
      %oe = tensor.empty() : tensor<1x1x100x16xf32>
      %oi = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%oe : tensor<1x1x100x16xf32>) {
      ^bb0(%9: f32, %10: f32):
        linalg.yield %9 : f32
      } -> tensor<1x1x100x16xf32>
      %o_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%ex, %2 : tensor<1x1x100x100xf32>, tensor<1x1x100x16xf32>) outs(%oi : tensor<1x1x100x16xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%a_3: f32, %c_1: f32, %acc_1: f32):
        %p_1 = arith.mulf %a_3, %c_1 : f32
        %sum_1 = arith.addf %acc_1, %p_1 : f32
        linalg.yield %sum_1 : f32
      } -> tensor<1x1x100x16xf32>
      %11 = tensor.empty() : tensor<1x1x100x16xf32>
      %o_2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%o_1, %l : tensor<1x1x100x16xf32>, tensor<1x1x100xf32>) outs(%11 : tensor<1x1x100x16xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%12: f32, %13: f32, %14: f32):
        %15 = arith.divf %12, %13 : f32
        linalg.yield %15 : f32
      } -> tensor<1x1x100x16xf32>
      tilefuse.yield %o_2 : tensor<1x1x100x16xf32>
    } -> (tensor<1x1x100x16xf32>)
    func.return %o : tensor<1x1x100x16xf32>
  }
}

// -----

// LLaMA: finfo.min above the diagonal, added once to the scaled scores: c = 0.
// CHECK-LABEL: func.func @finfo_min_buffer
// CHECK:       tilefuse.tile_grid [1, 1, 4]
// CHECK-NEXT:  ^bb0(%{{.*}}: index, %{{.*}}: index, %[[PQ:.*]]: index, %{{.*}}: tensor<1x1x100x16xf32>):
// CHECK:         %[[Q0:.*]] = arith.muli %[[PQ]], %{{.*}} : index
// CHECK:         %[[S:.*]] = arith.constant 100 : index
// CHECK-NEXT:    %[[C:.*]] = arith.constant 32 : index
// CHECK-NEXT:    %[[LAST:.*]] = arith.addi %[[Q0]], %[[C]] : index
// CHECK-NEXT:    %[[END:.*]] = arith.minsi %[[S]], %[[LAST]] : index
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[END]] step %{{.*}} iter_args
builtin.module {
  func.func @finfo_min_buffer(%q: tensor<1x1x100x16xf32>, %k: tensor<1x1x100x16xf32>, %v: tensor<1x1x100x16xf32>, %mask: tensor<1x1x100x100xf32> {tilefuse.huge_above = 0 : i64}) -> tensor<1x1x100x16xf32> {
    %o = tilefuse.group "fused_kernel_0" ins(%q, %k, %v, %mask : tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>, tensor<1x1x100x100xf32>) reason "flash-attention: matmul + cmpi + reduce_maximum + sub + reduce_add + matmul + div (11 ops)" attributes {cost = #tilefuse.cost<flops = 691600, fused_bytes = 25600, unfused_bytes = 454400, tc_flops = 0, sfu_ops = 11600, dtype = "f32">} {
    ^bb0(%0: tensor<1x1x100x16xf32>, %1: tensor<1x1x100x16xf32>, %2: tensor<1x1x100x16xf32>, %bm: tensor<1x1x100x100xf32>):
      %zero = arith.constant 0.000000e+00 : f32
      %se = tensor.empty() : tensor<1x1x100x100xf32>
      %si = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%se : tensor<1x1x100x100xf32>) {
      ^bb0(%3: f32, %4: f32):
        linalg.yield %3 : f32
      } -> tensor<1x1x100x100xf32>
      %scores = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%0, %1 : tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>) outs(%si : tensor<1x1x100x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%a: f32, %c: f32, %acc: f32):
        %p = arith.mulf %a, %c : f32
        %sum = arith.addf %acc, %p : f32
        linalg.yield %sum : f32
      } -> tensor<1x1x100x100xf32>
      %scale = arith.constant 2.500000e-01 : f32
      %neg_inf = arith.constant 0xff800000 : f32
      %scaled = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scores, %bm : tensor<1x1x100x100xf32>, tensor<1x1x100x100xf32>) outs(%se : tensor<1x1x100x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%sv: f32, %mv: f32, %out: f32):
        %r = arith.mulf %sv, %scale : f32
        %m = arith.addf %r, %mv : f32
        linalg.yield %m : f32
      } -> tensor<1x1x100x100xf32>
      %re = tensor.empty() : tensor<1x1x100xf32>
      %mi = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%neg_inf : f32) outs(%re : tensor<1x1x100xf32>) {
      ^bb0(%5: f32, %6: f32):
        linalg.yield %5 : f32
      } -> tensor<1x1x100xf32>
      %mx = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%scaled : tensor<1x1x100x100xf32>) outs(%mi : tensor<1x1x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%in: f32, %a_1: f32):
        %r_1 = arith.maximumf %in, %a_1 : f32
        linalg.yield %r_1 : f32
      } -> tensor<1x1x100xf32>
      %ex = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scaled, %mx : tensor<1x1x100x100xf32>, tensor<1x1x100xf32>) outs(%se : tensor<1x1x100x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%x: f32, %m_1: f32, %out_1: f32):
        %dd = arith.subf %x, %m_1 : f32
        %e = math.exp %dd : f32
        linalg.yield %e : f32
      } -> tensor<1x1x100x100xf32>
      %zi = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%re : tensor<1x1x100xf32>) {
      ^bb0(%7: f32, %8: f32):
        linalg.yield %7 : f32
      } -> tensor<1x1x100xf32>
      %l = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x1x100x100xf32>) outs(%zi : tensor<1x1x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%in_1: f32, %a_2: f32):
        %r_2 = arith.addf %in_1, %a_2 : f32
        linalg.yield %r_2 : f32
      } -> tensor<1x1x100xf32>
      %oe = tensor.empty() : tensor<1x1x100x16xf32>
      %oi = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%oe : tensor<1x1x100x16xf32>) {
      ^bb0(%9: f32, %10: f32):
        linalg.yield %9 : f32
      } -> tensor<1x1x100x16xf32>
      %o_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%ex, %2 : tensor<1x1x100x100xf32>, tensor<1x1x100x16xf32>) outs(%oi : tensor<1x1x100x16xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%a_3: f32, %c_1: f32, %acc_1: f32):
        %p_1 = arith.mulf %a_3, %c_1 : f32
        %sum_1 = arith.addf %acc_1, %p_1 : f32
        linalg.yield %sum_1 : f32
      } -> tensor<1x1x100x16xf32>
      %11 = tensor.empty() : tensor<1x1x100x16xf32>
      %o_2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%o_1, %l : tensor<1x1x100x16xf32>, tensor<1x1x100xf32>) outs(%11 : tensor<1x1x100x16xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%12: f32, %13: f32, %14: f32):
        %15 = arith.divf %12, %13 : f32
        linalg.yield %15 : f32
      } -> tensor<1x1x100x16xf32>
      tilefuse.yield %o_2 : tensor<1x1x100x16xf32>
    } -> (tensor<1x1x100x16xf32>)
    func.return %o : tensor<1x1x100x16xf32>
  }
}

// -----

// A -inf mask sliced from row 10: element (i, j) is the argument's (i + 10, j), so c = 10.
// CHECK-LABEL: func.func @sliced_buffer
// CHECK:       tilefuse.tile_grid [1, 1, 4]
// CHECK-NEXT:  ^bb0(%{{.*}}: index, %{{.*}}: index, %[[PQ:.*]]: index, %{{.*}}: tensor<1x1x100x16xf32>):
// CHECK:         %[[Q0:.*]] = arith.muli %[[PQ]], %{{.*}} : index
// CHECK:         %[[S:.*]] = arith.constant 100 : index
// CHECK-NEXT:    %[[C:.*]] = arith.constant 42 : index
// CHECK-NEXT:    %[[LAST:.*]] = arith.addi %[[Q0]], %[[C]] : index
// CHECK-NEXT:    %[[END:.*]] = arith.minsi %[[S]], %[[LAST]] : index
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[END]] step %{{.*}} iter_args
builtin.module {
  func.func @sliced_buffer(%q: tensor<1x1x100x16xf32>, %k: tensor<1x1x100x16xf32>, %v: tensor<1x1x100x16xf32>, %mask: tensor<1x1x120x100xf32> {tilefuse.neg_inf_above = 0 : i64}) -> tensor<1x1x100x16xf32> {
    %ms = tensor.extract_slice %mask[0, 0, 10, 0] [1, 1, 100, 100] [1, 1, 1, 1] : tensor<1x1x120x100xf32> to tensor<1x1x100x100xf32>
    %o = tilefuse.group "fused_kernel_0" ins(%q, %k, %v, %ms : tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>, tensor<1x1x100x100xf32>) reason "flash-attention: matmul + cmpi + reduce_maximum + sub + reduce_add + matmul + div (11 ops)" attributes {cost = #tilefuse.cost<flops = 691600, fused_bytes = 25600, unfused_bytes = 454400, tc_flops = 0, sfu_ops = 11600, dtype = "f32">} {
    ^bb0(%0: tensor<1x1x100x16xf32>, %1: tensor<1x1x100x16xf32>, %2: tensor<1x1x100x16xf32>, %bm: tensor<1x1x100x100xf32>):
      %zero = arith.constant 0.000000e+00 : f32
      %se = tensor.empty() : tensor<1x1x100x100xf32>
      %si = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%se : tensor<1x1x100x100xf32>) {
      ^bb0(%3: f32, %4: f32):
        linalg.yield %3 : f32
      } -> tensor<1x1x100x100xf32>
      %scores = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%0, %1 : tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>) outs(%si : tensor<1x1x100x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%a: f32, %c: f32, %acc: f32):
        %p = arith.mulf %a, %c : f32
        %sum = arith.addf %acc, %p : f32
        linalg.yield %sum : f32
      } -> tensor<1x1x100x100xf32>
      %scale = arith.constant 2.500000e-01 : f32
      %neg_inf = arith.constant 0xff800000 : f32
      %scaled = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scores, %bm : tensor<1x1x100x100xf32>, tensor<1x1x100x100xf32>) outs(%se : tensor<1x1x100x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%sv: f32, %mv: f32, %out: f32):
        %r = arith.mulf %sv, %scale : f32
        %m = arith.addf %r, %mv : f32
        linalg.yield %m : f32
      } -> tensor<1x1x100x100xf32>
      %re = tensor.empty() : tensor<1x1x100xf32>
      %mi = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%neg_inf : f32) outs(%re : tensor<1x1x100xf32>) {
      ^bb0(%5: f32, %6: f32):
        linalg.yield %5 : f32
      } -> tensor<1x1x100xf32>
      %mx = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%scaled : tensor<1x1x100x100xf32>) outs(%mi : tensor<1x1x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%in: f32, %a_1: f32):
        %r_1 = arith.maximumf %in, %a_1 : f32
        linalg.yield %r_1 : f32
      } -> tensor<1x1x100xf32>
      %ex = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scaled, %mx : tensor<1x1x100x100xf32>, tensor<1x1x100xf32>) outs(%se : tensor<1x1x100x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%x: f32, %m_1: f32, %out_1: f32):
        %dd = arith.subf %x, %m_1 : f32
        %e = math.exp %dd : f32
        linalg.yield %e : f32
      } -> tensor<1x1x100x100xf32>
      %zi = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%re : tensor<1x1x100xf32>) {
      ^bb0(%7: f32, %8: f32):
        linalg.yield %7 : f32
      } -> tensor<1x1x100xf32>
      %l = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x1x100x100xf32>) outs(%zi : tensor<1x1x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%in_1: f32, %a_2: f32):
        %r_2 = arith.addf %in_1, %a_2 : f32
        linalg.yield %r_2 : f32
      } -> tensor<1x1x100xf32>
      %oe = tensor.empty() : tensor<1x1x100x16xf32>
      %oi = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%oe : tensor<1x1x100x16xf32>) {
      ^bb0(%9: f32, %10: f32):
        linalg.yield %9 : f32
      } -> tensor<1x1x100x16xf32>
      %o_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%ex, %2 : tensor<1x1x100x100xf32>, tensor<1x1x100x16xf32>) outs(%oi : tensor<1x1x100x16xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%a_3: f32, %c_1: f32, %acc_1: f32):
        %p_1 = arith.mulf %a_3, %c_1 : f32
        %sum_1 = arith.addf %acc_1, %p_1 : f32
        linalg.yield %sum_1 : f32
      } -> tensor<1x1x100x16xf32>
      %11 = tensor.empty() : tensor<1x1x100x16xf32>
      %o_2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%o_1, %l : tensor<1x1x100x16xf32>, tensor<1x1x100xf32>) outs(%11 : tensor<1x1x100x16xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%12: f32, %13: f32, %14: f32):
        %15 = arith.divf %12, %13 : f32
        linalg.yield %15 : f32
      } -> tensor<1x1x100x16xf32>
      tilefuse.yield %o_2 : tensor<1x1x100x16xf32>
    } -> (tensor<1x1x100x16xf32>)
    func.return %o : tensor<1x1x100x16xf32>
  }
}

// -----

// A finite mask whose row 0 keeps no key (c = -1): the row is a softmax over
// the masked scores, so nothing is skipped.
// CHECK-LABEL: func.func @finfo_min_no_key
// CHECK:       tilefuse.tile_grid [1, 1, 4]
// CHECK-NOT:     arith.minsi
// CHECK:         scf.for
builtin.module {
  func.func @finfo_min_no_key(%q: tensor<1x1x100x16xf32>, %k: tensor<1x1x100x16xf32>, %v: tensor<1x1x100x16xf32>, %mask: tensor<1x1x100x100xf32> {tilefuse.huge_above = -1 : i64}) -> tensor<1x1x100x16xf32> {
    %o = tilefuse.group "fused_kernel_0" ins(%q, %k, %v, %mask : tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>, tensor<1x1x100x100xf32>) reason "flash-attention: matmul + cmpi + reduce_maximum + sub + reduce_add + matmul + div (11 ops)" attributes {cost = #tilefuse.cost<flops = 691600, fused_bytes = 25600, unfused_bytes = 454400, tc_flops = 0, sfu_ops = 11600, dtype = "f32">} {
    ^bb0(%0: tensor<1x1x100x16xf32>, %1: tensor<1x1x100x16xf32>, %2: tensor<1x1x100x16xf32>, %bm: tensor<1x1x100x100xf32>):
      %zero = arith.constant 0.000000e+00 : f32
      %se = tensor.empty() : tensor<1x1x100x100xf32>
      %si = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%se : tensor<1x1x100x100xf32>) {
      ^bb0(%3: f32, %4: f32):
        linalg.yield %3 : f32
      } -> tensor<1x1x100x100xf32>
      %scores = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%0, %1 : tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>) outs(%si : tensor<1x1x100x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%a: f32, %c: f32, %acc: f32):
        %p = arith.mulf %a, %c : f32
        %sum = arith.addf %acc, %p : f32
        linalg.yield %sum : f32
      } -> tensor<1x1x100x100xf32>
      %scale = arith.constant 2.500000e-01 : f32
      %neg_inf = arith.constant 0xff800000 : f32
      %scaled = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scores, %bm : tensor<1x1x100x100xf32>, tensor<1x1x100x100xf32>) outs(%se : tensor<1x1x100x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%sv: f32, %mv: f32, %out: f32):
        %r = arith.mulf %sv, %scale : f32
        %m = arith.addf %r, %mv : f32
        linalg.yield %m : f32
      } -> tensor<1x1x100x100xf32>
      %re = tensor.empty() : tensor<1x1x100xf32>
      %mi = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%neg_inf : f32) outs(%re : tensor<1x1x100xf32>) {
      ^bb0(%5: f32, %6: f32):
        linalg.yield %5 : f32
      } -> tensor<1x1x100xf32>
      %mx = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%scaled : tensor<1x1x100x100xf32>) outs(%mi : tensor<1x1x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%in: f32, %a_1: f32):
        %r_1 = arith.maximumf %in, %a_1 : f32
        linalg.yield %r_1 : f32
      } -> tensor<1x1x100xf32>
      %ex = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scaled, %mx : tensor<1x1x100x100xf32>, tensor<1x1x100xf32>) outs(%se : tensor<1x1x100x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%x: f32, %m_1: f32, %out_1: f32):
        %dd = arith.subf %x, %m_1 : f32
        %e = math.exp %dd : f32
        linalg.yield %e : f32
      } -> tensor<1x1x100x100xf32>
      %zi = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%re : tensor<1x1x100xf32>) {
      ^bb0(%7: f32, %8: f32):
        linalg.yield %7 : f32
      } -> tensor<1x1x100xf32>
      %l = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x1x100x100xf32>) outs(%zi : tensor<1x1x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%in_1: f32, %a_2: f32):
        %r_2 = arith.addf %in_1, %a_2 : f32
        linalg.yield %r_2 : f32
      } -> tensor<1x1x100xf32>
      %oe = tensor.empty() : tensor<1x1x100x16xf32>
      %oi = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%oe : tensor<1x1x100x16xf32>) {
      ^bb0(%9: f32, %10: f32):
        linalg.yield %9 : f32
      } -> tensor<1x1x100x16xf32>
      %o_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%ex, %2 : tensor<1x1x100x100xf32>, tensor<1x1x100x16xf32>) outs(%oi : tensor<1x1x100x16xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%a_3: f32, %c_1: f32, %acc_1: f32):
        %p_1 = arith.mulf %a_3, %c_1 : f32
        %sum_1 = arith.addf %acc_1, %p_1 : f32
        linalg.yield %sum_1 : f32
      } -> tensor<1x1x100x16xf32>
      %11 = tensor.empty() : tensor<1x1x100x16xf32>
      %o_2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%o_1, %l : tensor<1x1x100x16xf32>, tensor<1x1x100xf32>) outs(%11 : tensor<1x1x100x16xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%12: f32, %13: f32, %14: f32):
        %15 = arith.divf %12, %13 : f32
        linalg.yield %15 : f32
      } -> tensor<1x1x100x16xf32>
      tilefuse.yield %o_2 : tensor<1x1x100x16xf32>
    } -> (tensor<1x1x100x16xf32>)
    func.return %o : tensor<1x1x100x16xf32>
  }
}

// -----

// A mask read from memory without a fact: nothing is known, nothing is skipped.
// CHECK-LABEL: func.func @mask_without_fact
// CHECK:       tilefuse.tile_grid [1, 1, 4]
// CHECK-NOT:     arith.minsi
// CHECK:         scf.for
builtin.module {
  func.func @mask_without_fact(%q: tensor<1x1x100x16xf32>, %k: tensor<1x1x100x16xf32>, %v: tensor<1x1x100x16xf32>, %mask: tensor<1x1x100x100xf32>) -> tensor<1x1x100x16xf32> {
    %o = tilefuse.group "fused_kernel_0" ins(%q, %k, %v, %mask : tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>, tensor<1x1x100x100xf32>) reason "flash-attention: matmul + cmpi + reduce_maximum + sub + reduce_add + matmul + div (11 ops)" attributes {cost = #tilefuse.cost<flops = 691600, fused_bytes = 25600, unfused_bytes = 454400, tc_flops = 0, sfu_ops = 11600, dtype = "f32">} {
    ^bb0(%0: tensor<1x1x100x16xf32>, %1: tensor<1x1x100x16xf32>, %2: tensor<1x1x100x16xf32>, %bm: tensor<1x1x100x100xf32>):
      %zero = arith.constant 0.000000e+00 : f32
      %se = tensor.empty() : tensor<1x1x100x100xf32>
      %si = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%se : tensor<1x1x100x100xf32>) {
      ^bb0(%3: f32, %4: f32):
        linalg.yield %3 : f32
      } -> tensor<1x1x100x100xf32>
      %scores = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%0, %1 : tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>) outs(%si : tensor<1x1x100x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%a: f32, %c: f32, %acc: f32):
        %p = arith.mulf %a, %c : f32
        %sum = arith.addf %acc, %p : f32
        linalg.yield %sum : f32
      } -> tensor<1x1x100x100xf32>
      %scale = arith.constant 2.500000e-01 : f32
      %neg_inf = arith.constant 0xff800000 : f32
      %scaled = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scores, %bm : tensor<1x1x100x100xf32>, tensor<1x1x100x100xf32>) outs(%se : tensor<1x1x100x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%sv: f32, %mv: f32, %out: f32):
        %r = arith.mulf %sv, %scale : f32
        %m = arith.addf %r, %mv : f32
        linalg.yield %m : f32
      } -> tensor<1x1x100x100xf32>
      %re = tensor.empty() : tensor<1x1x100xf32>
      %mi = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%neg_inf : f32) outs(%re : tensor<1x1x100xf32>) {
      ^bb0(%5: f32, %6: f32):
        linalg.yield %5 : f32
      } -> tensor<1x1x100xf32>
      %mx = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%scaled : tensor<1x1x100x100xf32>) outs(%mi : tensor<1x1x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%in: f32, %a_1: f32):
        %r_1 = arith.maximumf %in, %a_1 : f32
        linalg.yield %r_1 : f32
      } -> tensor<1x1x100xf32>
      %ex = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scaled, %mx : tensor<1x1x100x100xf32>, tensor<1x1x100xf32>) outs(%se : tensor<1x1x100x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%x: f32, %m_1: f32, %out_1: f32):
        %dd = arith.subf %x, %m_1 : f32
        %e = math.exp %dd : f32
        linalg.yield %e : f32
      } -> tensor<1x1x100x100xf32>
      %zi = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%re : tensor<1x1x100xf32>) {
      ^bb0(%7: f32, %8: f32):
        linalg.yield %7 : f32
      } -> tensor<1x1x100xf32>
      %l = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x1x100x100xf32>) outs(%zi : tensor<1x1x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%in_1: f32, %a_2: f32):
        %r_2 = arith.addf %in_1, %a_2 : f32
        linalg.yield %r_2 : f32
      } -> tensor<1x1x100xf32>
      %oe = tensor.empty() : tensor<1x1x100x16xf32>
      %oi = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%oe : tensor<1x1x100x16xf32>) {
      ^bb0(%9: f32, %10: f32):
        linalg.yield %9 : f32
      } -> tensor<1x1x100x16xf32>
      %o_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%ex, %2 : tensor<1x1x100x100xf32>, tensor<1x1x100x16xf32>) outs(%oi : tensor<1x1x100x16xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%a_3: f32, %c_1: f32, %acc_1: f32):
        %p_1 = arith.mulf %a_3, %c_1 : f32
        %sum_1 = arith.addf %acc_1, %p_1 : f32
        linalg.yield %sum_1 : f32
      } -> tensor<1x1x100x16xf32>
      %11 = tensor.empty() : tensor<1x1x100x16xf32>
      %o_2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%o_1, %l : tensor<1x1x100x16xf32>, tensor<1x1x100xf32>) outs(%11 : tensor<1x1x100x16xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%12: f32, %13: f32, %14: f32):
        %15 = arith.divf %12, %13 : f32
        linalg.yield %15 : f32
      } -> tensor<1x1x100x16xf32>
      tilefuse.yield %o_2 : tensor<1x1x100x16xf32>
    } -> (tensor<1x1x100x16xf32>)
    func.return %o : tensor<1x1x100x16xf32>
  }
}

// -----

// Zeros added to the scores mask nothing.
// CHECK-LABEL: func.func @zero_fact_added
// CHECK:       tilefuse.tile_grid [1, 1, 4]
// CHECK-NOT:     arith.minsi
// CHECK:         scf.for
builtin.module {
  func.func @zero_fact_added(%q: tensor<1x1x100x16xf32>, %k: tensor<1x1x100x16xf32>, %v: tensor<1x1x100x16xf32>, %mask: tensor<1x1x100x100xf32> {tilefuse.zero_above = 0 : i64}) -> tensor<1x1x100x16xf32> {
    %o = tilefuse.group "fused_kernel_0" ins(%q, %k, %v, %mask : tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>, tensor<1x1x100x100xf32>) reason "flash-attention: matmul + cmpi + reduce_maximum + sub + reduce_add + matmul + div (11 ops)" attributes {cost = #tilefuse.cost<flops = 691600, fused_bytes = 25600, unfused_bytes = 454400, tc_flops = 0, sfu_ops = 11600, dtype = "f32">} {
    ^bb0(%0: tensor<1x1x100x16xf32>, %1: tensor<1x1x100x16xf32>, %2: tensor<1x1x100x16xf32>, %bm: tensor<1x1x100x100xf32>):
      %zero = arith.constant 0.000000e+00 : f32
      %se = tensor.empty() : tensor<1x1x100x100xf32>
      %si = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%se : tensor<1x1x100x100xf32>) {
      ^bb0(%3: f32, %4: f32):
        linalg.yield %3 : f32
      } -> tensor<1x1x100x100xf32>
      %scores = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%0, %1 : tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>) outs(%si : tensor<1x1x100x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%a: f32, %c: f32, %acc: f32):
        %p = arith.mulf %a, %c : f32
        %sum = arith.addf %acc, %p : f32
        linalg.yield %sum : f32
      } -> tensor<1x1x100x100xf32>
      %scale = arith.constant 2.500000e-01 : f32
      %neg_inf = arith.constant 0xff800000 : f32
      %scaled = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scores, %bm : tensor<1x1x100x100xf32>, tensor<1x1x100x100xf32>) outs(%se : tensor<1x1x100x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%sv: f32, %mv: f32, %out: f32):
        %r = arith.mulf %sv, %scale : f32
        %m = arith.addf %r, %mv : f32
        linalg.yield %m : f32
      } -> tensor<1x1x100x100xf32>
      %re = tensor.empty() : tensor<1x1x100xf32>
      %mi = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%neg_inf : f32) outs(%re : tensor<1x1x100xf32>) {
      ^bb0(%5: f32, %6: f32):
        linalg.yield %5 : f32
      } -> tensor<1x1x100xf32>
      %mx = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%scaled : tensor<1x1x100x100xf32>) outs(%mi : tensor<1x1x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%in: f32, %a_1: f32):
        %r_1 = arith.maximumf %in, %a_1 : f32
        linalg.yield %r_1 : f32
      } -> tensor<1x1x100xf32>
      %ex = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scaled, %mx : tensor<1x1x100x100xf32>, tensor<1x1x100xf32>) outs(%se : tensor<1x1x100x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%x: f32, %m_1: f32, %out_1: f32):
        %dd = arith.subf %x, %m_1 : f32
        %e = math.exp %dd : f32
        linalg.yield %e : f32
      } -> tensor<1x1x100x100xf32>
      %zi = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%re : tensor<1x1x100xf32>) {
      ^bb0(%7: f32, %8: f32):
        linalg.yield %7 : f32
      } -> tensor<1x1x100xf32>
      %l = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x1x100x100xf32>) outs(%zi : tensor<1x1x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%in_1: f32, %a_2: f32):
        %r_2 = arith.addf %in_1, %a_2 : f32
        linalg.yield %r_2 : f32
      } -> tensor<1x1x100xf32>
      %oe = tensor.empty() : tensor<1x1x100x16xf32>
      %oi = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%oe : tensor<1x1x100x16xf32>) {
      ^bb0(%9: f32, %10: f32):
        linalg.yield %9 : f32
      } -> tensor<1x1x100x16xf32>
      %o_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%ex, %2 : tensor<1x1x100x100xf32>, tensor<1x1x100x16xf32>) outs(%oi : tensor<1x1x100x16xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%a_3: f32, %c_1: f32, %acc_1: f32):
        %p_1 = arith.mulf %a_3, %c_1 : f32
        %sum_1 = arith.addf %acc_1, %p_1 : f32
        linalg.yield %sum_1 : f32
      } -> tensor<1x1x100x16xf32>
      %11 = tensor.empty() : tensor<1x1x100x16xf32>
      %o_2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%o_1, %l : tensor<1x1x100x16xf32>, tensor<1x1x100xf32>) outs(%11 : tensor<1x1x100x16xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%12: f32, %13: f32, %14: f32):
        %15 = arith.divf %12, %13 : f32
        linalg.yield %15 : f32
      } -> tensor<1x1x100x16xf32>
      tilefuse.yield %o_2 : tensor<1x1x100x16xf32>
    } -> (tensor<1x1x100x16xf32>)
    func.return %o : tensor<1x1x100x16xf32>
  }
}

// -----

// The same tril buffer known exact below its diagonal (`tilefuse.mask_exact`: every
// kept key's element nonzero, `exact_mask_decisions`): in the loop over the key tiles
// below the diagonal the zero test is the constant false (the printer drops the
// buffer's unused load); the diagonal's loop tests the buffer.
// CHECK-LABEL: func.func @exact_tril_buffer
// CHECK:         scf.for
// CHECK:           %bz = arith.constant false
// CHECK-NOT:       arith.cmpf oeq, %bv
// CHECK:           scf.yield
// CHECK:         scf.for
// CHECK:           arith.cmpf oeq, %bv
// CHECK:           scf.yield
builtin.module {
  func.func @exact_tril_buffer(%q: tensor<1x1x100x16xf32>, %k: tensor<1x1x100x16xf32>, %v: tensor<1x1x100x16xf32>, %bias: tensor<1x1x100x100xf32> {tilefuse.zero_above = 0 : i64, tilefuse.mask_exact}) -> tensor<1x1x100x16xf32> {
    %b2 = tensor.collapse_shape %bias [[0, 1, 2], [3]] : tensor<1x1x100x100xf32> into tensor<100x100xf32>
    %o = tilefuse.group "fused_kernel_0" ins(%q, %k, %v, %b2 : tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>, tensor<100x100xf32>) reason "flash-attention: matmul + cmpi + reduce_maximum + sub + reduce_add + matmul + div (11 ops)" attributes {cost = #tilefuse.cost<flops = 691600, fused_bytes = 25600, unfused_bytes = 454400, tc_flops = 0, sfu_ops = 11600, dtype = "f32">} {
    ^bb0(%0: tensor<1x1x100x16xf32>, %1: tensor<1x1x100x16xf32>, %2: tensor<1x1x100x16xf32>, %bm: tensor<100x100xf32>):
      %zero = arith.constant 0.000000e+00 : f32
      %se = tensor.empty() : tensor<1x1x100x100xf32>
      %si = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%se : tensor<1x1x100x100xf32>) {
      ^bb0(%3: f32, %4: f32):
        linalg.yield %3 : f32
      } -> tensor<1x1x100x100xf32>
      %scores = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%0, %1 : tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>) outs(%si : tensor<1x1x100x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%a: f32, %c: f32, %acc: f32):
        %p = arith.mulf %a, %c : f32
        %sum = arith.addf %acc, %p : f32
        linalg.yield %sum : f32
      } -> tensor<1x1x100x100xf32>
      %scale = arith.constant 2.500000e-01 : f32
      %neg_inf = arith.constant 0xff800000 : f32
      %ze = tensor.empty() : tensor<100x100xi1>
      %zm = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%bm : tensor<100x100xf32>) outs(%ze : tensor<100x100xi1>) {
      ^bb0(%bv: f32, %bo: i1):
        %bz = arith.cmpf oeq, %bv, %zero : f32
        linalg.yield %bz : i1
      } -> tensor<100x100xi1>
      %scaled = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scores, %zm : tensor<1x1x100x100xf32>, tensor<100x100xi1>) outs(%se : tensor<1x1x100x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%sv: f32, %z: i1, %out: f32):
        %r = arith.mulf %sv, %scale : f32
        %m = arith.select %z, %neg_inf, %r : f32
        linalg.yield %m : f32
      } -> tensor<1x1x100x100xf32>
      %re = tensor.empty() : tensor<1x1x100xf32>
      %mi = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%neg_inf : f32) outs(%re : tensor<1x1x100xf32>) {
      ^bb0(%5: f32, %6: f32):
        linalg.yield %5 : f32
      } -> tensor<1x1x100xf32>
      %mx = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%scaled : tensor<1x1x100x100xf32>) outs(%mi : tensor<1x1x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%in: f32, %a_1: f32):
        %r_1 = arith.maximumf %in, %a_1 : f32
        linalg.yield %r_1 : f32
      } -> tensor<1x1x100xf32>
      %ex = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scaled, %mx : tensor<1x1x100x100xf32>, tensor<1x1x100xf32>) outs(%se : tensor<1x1x100x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%x: f32, %m_1: f32, %out_1: f32):
        %dd = arith.subf %x, %m_1 : f32
        %e = math.exp %dd : f32
        linalg.yield %e : f32
      } -> tensor<1x1x100x100xf32>
      %zi = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%re : tensor<1x1x100xf32>) {
      ^bb0(%7: f32, %8: f32):
        linalg.yield %7 : f32
      } -> tensor<1x1x100xf32>
      %l = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x1x100x100xf32>) outs(%zi : tensor<1x1x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%in_1: f32, %a_2: f32):
        %r_2 = arith.addf %in_1, %a_2 : f32
        linalg.yield %r_2 : f32
      } -> tensor<1x1x100xf32>
      %oe = tensor.empty() : tensor<1x1x100x16xf32>
      %oi = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%oe : tensor<1x1x100x16xf32>) {
      ^bb0(%9: f32, %10: f32):
        linalg.yield %9 : f32
      } -> tensor<1x1x100x16xf32>
      %o_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%ex, %2 : tensor<1x1x100x100xf32>, tensor<1x1x100x16xf32>) outs(%oi : tensor<1x1x100x16xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%a_3: f32, %c_1: f32, %acc_1: f32):
        %p_1 = arith.mulf %a_3, %c_1 : f32
        %sum_1 = arith.addf %acc_1, %p_1 : f32
        linalg.yield %sum_1 : f32
      } -> tensor<1x1x100x16xf32>
      %11 = tensor.empty() : tensor<1x1x100x16xf32>
      %o_2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%o_1, %l : tensor<1x1x100x16xf32>, tensor<1x1x100xf32>) outs(%11 : tensor<1x1x100x16xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%12: f32, %13: f32, %14: f32):
        %15 = arith.divf %12, %13 : f32
        linalg.yield %15 : f32
      } -> tensor<1x1x100x16xf32>
      tilefuse.yield %o_2 : tensor<1x1x100x16xf32>
    } -> (tensor<1x1x100x16xf32>)
    func.return %o : tensor<1x1x100x16xf32>
  }
}
