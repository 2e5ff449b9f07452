// RUN: tilefuse-opt %s --split-input-file -p 'tile-and-fuse' | filecheck %s

// Causal masks end the online key loop early (analysis/causal.py): every key
// j > i + c of query row i is -inf, so a query tile [q0, q0 + BQ) stops at
// min(S, q0 + BQ + c). The key chunks wholly below the diagonal (j0 + BK - 1 -
// q0 <= c: the first (q0 + c + 1) / BK) run first, in a loop where the mask's
// comparison is known true (`causal.below_diagonal`) and the select is gone;
// the mask stays in the second loop, over the diagonal's chunks.

// j <= i in the scale's payload (`select(j <= i, s * scale, -inf)`): c = 0.
// CHECK-LABEL: func.func @causal
// CHECK:       tilefuse.tile_grid [1, 1, 4]
// CHECK-NEXT:  ^bb0(%{{.*}}: index, %{{.*}}: index, %[[PQ:.*]]: index, %{{.*}}: tensor<1x1x100x16xf32>):
// CHECK:         %[[Q0:.*]] = arith.muli %[[PQ]], %{{.*}} : index
// CHECK:         %[[S:.*]] = arith.constant 100 : index
// CHECK-NEXT:    %[[C:.*]] = arith.constant 32 : index
// CHECK-NEXT:    %[[LAST:.*]] = arith.addi %[[Q0]], %[[C]] : index
// CHECK-NEXT:    %[[END:.*]] = arith.minsi %[[S]], %[[LAST]] : index
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant 1 : index
// CHECK:         %[[D:.*]] = arith.addi %[[Q0]], %[[ONE]] : index
// CHECK-NEXT:    %[[DP:.*]] = arith.maxsi %[[D]], %{{.*}} : index
// CHECK-NEXT:    %[[N:.*]] = arith.divsi %[[DP]], %{{.*}} : index
// CHECK-NEXT:    %[[J:.*]] = arith.muli %[[N]], %{{.*}} : index
// CHECK-NEXT:    %[[WHOLE:.*]] = arith.minsi %[[J]], %[[END]] : index
// CHECK:         %[[R0:[0-9]+]], %[[R1:[0-9]+]], %[[R2:[0-9]+]] = scf.for %{{.*}} = %{{.*}} to %[[WHOLE]] step %{{.*}} iter_args
// CHECK-NOT:       arith.cmpi ule
// CHECK-NOT:       arith.select %{{.*}}, %{{.*}}, %neg_inf
// CHECK:         scf.for %{{.*}} = %[[WHOLE]] to %[[END]] step %{{.*}} iter_args(%{{.*}} = %[[R0]], %{{.*}} = %[[R1]], %{{.*}} = %[[R2]])
// CHECK:           arith.cmpi ule
// CHECK:           arith.select %ok{{.*}}, %{{.*}}, %neg_inf
builtin.module {
  func.func @causal(%q: tensor<1x1x100x16xf32>, %k: tensor<1x1x100x16xf32>, %v: tensor<1x1x100x16xf32>) -> tensor<1x1x100x16xf32> {
    %o = tilefuse.group "fused_kernel_0" ins(%q, %k, %v : tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>) reason "flash-attention: matmul + cmpi + reduce_maximum + sub + reduce_add + matmul + div (11 ops)" attributes {cost = #tilefuse.cost<flops = 691600, fused_bytes = 25600, unfused_bytes = 454400, tc_flops = 0, sfu_ops = 11600, dtype = "f32">} {
    ^bb0(%0: tensor<1x1x100x16xf32>, %1: tensor<1x1x100x16xf32>, %2: tensor<1x1x100x16xf32>):
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
      %scaled = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scores : tensor<1x1x100x100xf32>) outs(%se : tensor<1x1x100x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%sv: f32, %out: f32):
        %i = linalg.index 2 : index
        %j = linalg.index 3 : index
        %ok = arith.cmpi ule, %j, %i : index
        %r = arith.mulf %sv, %scale : f32
        %m = arith.select %ok, %r, %neg_inf : f32
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

// j + 5 <= i: c = -5 (the first five rows keep no key), BQ + c = 27.
// CHECK-LABEL: func.func @shifted_down
// CHECK:       ^bb0(%{{.*}}: index, %{{.*}}: index, %[[PQ:.*]]: index, %{{.*}}: tensor<1x1x100x16xf32>):
// CHECK:         %[[Q0:.*]] = arith.muli %[[PQ]], %{{.*}} : index
// CHECK:         %[[S:.*]] = arith.constant 100 : index
// CHECK-NEXT:    %[[C:.*]] = arith.constant 27 : index
// CHECK-NEXT:    %[[LAST:.*]] = arith.addi %[[Q0]], %[[C]] : index
// CHECK-NEXT:    %[[END:.*]] = arith.minsi %[[S]], %[[LAST]] : index
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[END]] step
builtin.module {
  func.func @shifted_down(%q: tensor<1x1x100x16xf32>, %k: tensor<1x1x100x16xf32>, %v: tensor<1x1x100x16xf32>) -> tensor<1x1x100x16xf32> {
    %o = tilefuse.group "fused_kernel_0" ins(%q, %k, %v : tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>) reason "flash-attention: matmul + addi + reduce_maximum + sub + reduce_add + matmul + div (11 ops)" attributes {cost = #tilefuse.cost<flops = 701600, fused_bytes = 25600, unfused_bytes = 454400, tc_flops = 0, sfu_ops = 11600, dtype = "f32">} {
    ^bb0(%0: tensor<1x1x100x16xf32>, %1: tensor<1x1x100x16xf32>, %2: tensor<1x1x100x16xf32>):
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
      %scaled = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scores : tensor<1x1x100x100xf32>) outs(%se : tensor<1x1x100x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%sv: f32, %out: f32):
        %i = linalg.index 2 : index
        %j = linalg.index 3 : index
        %c5 = arith.constant 5 : index
        %j5 = arith.addi %j, %c5 : index
        %ok = arith.cmpi sle, %j5, %i : index
        %r = arith.mulf %sv, %scale : f32
        %m = arith.select %ok, %r, %neg_inf : f32
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

// j >= i keeps the keys past the diagonal: the loop runs over all of them.
// CHECK-LABEL: func.func @anti_causal
// CHECK:         %[[S:.*]] = arith.constant 100 : index
// CHECK-NOT:     arith.minsi
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[S]] step
builtin.module {
  func.func @anti_causal(%q: tensor<1x1x100x16xf32>, %k: tensor<1x1x100x16xf32>, %v: tensor<1x1x100x16xf32>) -> tensor<1x1x100x16xf32> {
    %o = tilefuse.group "fused_kernel_0" ins(%q, %k, %v : tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>) reason "flash-attention: matmul + cmpi + reduce_maximum + sub + reduce_add + matmul + div (11 ops)" attributes {cost = #tilefuse.cost<flops = 691600, fused_bytes = 25600, unfused_bytes = 454400, tc_flops = 0, sfu_ops = 11600, dtype = "f32">} {
    ^bb0(%0: tensor<1x1x100x16xf32>, %1: tensor<1x1x100x16xf32>, %2: tensor<1x1x100x16xf32>):
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
      %scaled = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scores : tensor<1x1x100x100xf32>) outs(%se : tensor<1x1x100x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%sv: f32, %out: f32):
        %i = linalg.index 2 : index
        %j = linalg.index 3 : index
        %ok = arith.cmpi uge, %j, %i : index
        %r = arith.mulf %sv, %scale : f32
        %m = arith.select %ok, %r, %neg_inf : f32
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

// s + select(j <= i, 0, -1e9): a masked key's exp is tiny, not exactly 0.
// CHECK-LABEL: func.func @additive_finite
// CHECK:         %[[S:.*]] = arith.constant 100 : index
// CHECK-NOT:     arith.minsi
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[S]] step
builtin.module {
  func.func @additive_finite(%q: tensor<1x1x100x16xf32>, %k: tensor<1x1x100x16xf32>, %v: tensor<1x1x100x16xf32>) -> tensor<1x1x100x16xf32> {
    %o = tilefuse.group "fused_kernel_0" ins(%q, %k, %v : tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>, tensor<1x1x100x16xf32>) reason "flash-attention: matmul + cmpi + reduce_maximum + sub + reduce_add + matmul + div (11 ops)" attributes {cost = #tilefuse.cost<flops = 701600, fused_bytes = 25600, unfused_bytes = 454400, tc_flops = 0, sfu_ops = 11600, dtype = "f32">} {
    ^bb0(%0: tensor<1x1x100x16xf32>, %1: tensor<1x1x100x16xf32>, %2: tensor<1x1x100x16xf32>):
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
      %scaled = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scores : tensor<1x1x100x100xf32>) outs(%se : tensor<1x1x100x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%sv: f32, %out: f32):
        %i = linalg.index 2 : index
        %j = linalg.index 3 : index
        %ok = arith.cmpi ule, %j, %i : index
        %big = arith.constant -1.000000e+09 : f32
        %z = arith.constant 0.000000e+00 : f32
        %add = arith.select %ok, %z, %big : f32
        %r = arith.mulf %sv, %scale : f32
        %m = arith.addf %r, %add : f32
        linalg.yield %m : f32
      } -> tensor<1x1x100x100xf32>
      %neg_inf = arith.constant 0xff800000 : f32
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

// f32 SDPA(is_causal=True) as torch-mlir exports it: `arange` j - i <= 0, AND-ed
// with a constant all-true mask, `s + select(keep, 0, -inf)` with the 0 and -inf
// 0-d constants given to the group.
// CHECK-LABEL: func.func @sdpa
// CHECK:       tilefuse.group "fused_kernel_2"
// CHECK:         %[[S:.*]] = arith.constant 100 : index
// CHECK-NEXT:    %[[C:.*]] = arith.constant 32 : index
// CHECK-NEXT:    %[[LAST:.*]] = arith.addi %{{.*}}, %[[C]] : index
// CHECK-NEXT:    %[[END:.*]] = arith.minsi %[[S]], %[[LAST]] : index
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[END]] step
// CHECK:           arith.cmpi sle
builtin.module {
  func.func @sdpa(%arg0: tensor<1x1x100x16xf32>, %arg1: tensor<1x1x100x16xf32>, %arg2: tensor<1x1x100x16xf32>) -> tensor<1x1x100x16xf32> {
    %cst = arith.constant dense<0.000000e+00> : tensor<1x1x100x100xf32>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<f32>
    %cst_2 = arith.constant dense<0xff800000> : tensor<f32>
    %cst_3 = arith.constant dense<true> : tensor<100x100xi1>
    %0 = tilefuse.group "fused_kernel_1" ins(%arg1 : tensor<1x1x100x16xf32>) reason "pointwise: mul (1 ops)" attributes {cost = #tilefuse.cost<flops = 1600, fused_bytes = 12800, unfused_bytes = 12800, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
    ^bb0(%1: tensor<1x1x100x16xf32>):
      %2 = tensor.empty() : tensor<1x1x16x100xf32>
      %cst_4 = arith.constant 5.000000e-01 : f32
      %3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%1 : tensor<1x1x100x16xf32>) outs(%2 : tensor<1x1x16x100xf32>) {
      ^bb0(%in: f32, %out: f32):
        %4 = arith.mulf %in, %cst_4 : f32
        linalg.yield %4 : f32
      } -> tensor<1x1x16x100xf32>
      tilefuse.yield %3 : tensor<1x1x16x100xf32>
    } -> (tensor<1x1x16x100xf32>)
    %collapsed = tensor.collapse_shape %0 [[0 : i64], [1 : i64, 2 : i64], [3 : i64]] : tensor<1x1x16x100xf32> into tensor<1x16x100xf32>
    %1 = tilefuse.group "fused_kernel_0" ins(%arg0 : tensor<1x1x100x16xf32>) reason "pointwise: mul (1 ops)" attributes {cost = #tilefuse.cost<flops = 1600, fused_bytes = 12800, unfused_bytes = 12800, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
    ^bb0(%2: tensor<1x1x100x16xf32>):
      %3 = tensor.empty() : tensor<1x1x100x16xf32>
      %cst_4 = arith.constant 5.000000e-01 : f32
      %4 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%2 : tensor<1x1x100x16xf32>) outs(%3 : tensor<1x1x100x16xf32>) {
      ^bb0(%in: f32, %out: f32):
        %5 = arith.mulf %in, %cst_4 : f32
        linalg.yield %5 : f32
      } -> tensor<1x1x100x16xf32>
      tilefuse.yield %4 : tensor<1x1x100x16xf32>
    } -> (tensor<1x1x100x16xf32>)
    %collapsed_1 = tensor.collapse_shape %arg2 [[0 : i64], [1 : i64, 2 : i64], [3 : i64]] : tensor<1x1x100x16xf32> into tensor<1x100x16xf32>
    %expanded = tilefuse.group "fused_kernel_2" ins(%cst_3, %cst_1, %cst_2, %1, %collapsed, %collapsed_1 : tensor<100x100xi1>, tensor<f32>, tensor<f32>, tensor<1x1x100x16xf32>, tensor<1x16x100xf32>, tensor<1x100x16xf32>) reason "flash-attention: subi + cmpi + andi + select + matmul + add + reduce_maximum + cmp + reduce_add + matmul + div (16 ops)" attributes {cost = #tilefuse.cost<flops = 723200, fused_bytes = 35608, unfused_bytes = 747208, tc_flops = 0, sfu_ops = 11600, dtype = "f32">} {
    ^bb0(%2: tensor<100x100xi1>, %3: tensor<f32>, %4: tensor<f32>, %5: tensor<1x1x100x16xf32>, %6: tensor<1x16x100xf32>, %7: tensor<1x100x16xf32>):
      %8 = tensor.empty() : tensor<100xi64>
      %9 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%8 : tensor<100xi64>) {
      ^bb0(%out: i64):
        %10 = linalg.index 0 : index
        %11 = arith.index_cast %10 : index to i64
        linalg.yield %11 : i64
      } -> tensor<100xi64>
      %12 = tensor.empty() : tensor<100x100xi64>
      %13 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%9, %9 : tensor<100xi64>, tensor<100xi64>) outs(%12 : tensor<100x100xi64>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%in: i64, %in_1: i64, %out_1: i64):
        %14 = arith.subi %in, %in_1 : i64
        linalg.yield %14 : i64
      } -> tensor<100x100xi64>
      %15 = tensor.empty() : tensor<100x100xi1>
      %c0_i64 = arith.constant 0 : i64
      %16 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%13 : tensor<100x100xi64>) outs(%15 : tensor<100x100xi1>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%in_2: i64, %out_2: i1):
        %17 = arith.cmpi sle, %in_2, %c0_i64 : i64
        linalg.yield %17 : i1
      } -> tensor<100x100xi1>
      %18 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%16, %2 : tensor<100x100xi1>, tensor<100x100xi1>) outs(%15 : tensor<100x100xi1>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%in_3: i1, %in_4: i1, %out_3: i1):
        %19 = arith.andi %in_3, %in_4 : i1
        linalg.yield %19 : i1
      } -> tensor<100x100xi1>
      %20 = tensor.empty() : tensor<100x100xf32>
      %21 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%18, %3, %4 : tensor<100x100xi1>, tensor<f32>, tensor<f32>) outs(%20 : tensor<100x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%in_5: i1, %in_6: f32, %in_7: f32, %out_4: f32):
        %22 = arith.select %in_5, %in_6, %in_7 : f32
        linalg.yield %22 : f32
      } -> tensor<100x100xf32>
      %cst_4 = arith.constant 0.000000e+00 : f32
      %23 = tensor.empty() : tensor<1x1x100x100xf32>
      %24 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%cst_4 : f32) outs(%23 : tensor<1x1x100x100xf32>) {
      ^bb0(%25: f32, %26: f32):
        linalg.yield %25 : f32
      } -> tensor<1x1x100x100xf32>
      %expanded_1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%5, %6 : tensor<1x1x100x16xf32>, tensor<1x16x100xf32>) outs(%24 : tensor<1x1x100x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%27: f32, %28: f32, %29: f32):
        %30 = arith.mulf %27, %28 : f32
        %31 = arith.addf %29, %30 : f32
        linalg.yield %31 : f32
      } -> tensor<1x1x100x100xf32>
      %32 = tensor.empty() : tensor<1x1x100x100xf32>
      %33 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_1, %21 : tensor<1x1x100x100xf32>, tensor<100x100xf32>) outs(%32 : tensor<1x1x100x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%in_8: f32, %in_9: f32, %out_5: f32):
        %34 = arith.addf %in_8, %in_9 : f32
        linalg.yield %34 : f32
      } -> tensor<1x1x100x100xf32>
      %cst_5 = arith.constant 0xff800000 : f32
      %35 = tensor.empty() : tensor<1x1x100xf32>
      %36 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%cst_5 : f32) outs(%35 : tensor<1x1x100xf32>) {
      ^bb0(%37: f32, %38: f32):
        linalg.yield %37 : f32
      } -> tensor<1x1x100xf32>
      %39 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%33 : tensor<1x1x100x100xf32>) outs(%36 : tensor<1x1x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%in_10: f32, %out_6: f32):
        %40 = arith.maximumf %in_10, %out_6 : f32
        linalg.yield %40 : f32
      } -> tensor<1x1x100xf32>
      %41 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%33, %39 : tensor<1x1x100x100xf32>, tensor<1x1x100xf32>) outs(%32 : tensor<1x1x100x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%42: f32, %43: f32, %44: f32):
        %45 = arith.constant 0xff800000 : f32
        %46 = arith.constant 0.000000e+00 : f32
        %47 = arith.cmpf oeq, %43, %45 : f32
        %48 = arith.select %47, %46, %43 : f32
        %49 = arith.subf %42, %48 : f32
        %50 = math.exp %49 : f32
        linalg.yield %50 : f32
      } -> tensor<1x1x100x100xf32>
      %51 = tensor.empty() : tensor<1x1x100xf32>
      %52 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%cst_4 : f32) outs(%51 : tensor<1x1x100xf32>) {
      ^bb0(%53: f32, %54: f32):
        linalg.yield %53 : f32
      } -> tensor<1x1x100xf32>
      %55 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%41 : tensor<1x1x100x100xf32>) outs(%52 : tensor<1x1x100xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%in_11: f32, %out_7: f32):
        %56 = arith.addf %in_11, %out_7 : f32
        linalg.yield %56 : f32
      } -> tensor<1x1x100xf32>
      %57 = tensor.empty() : tensor<1x1x100x16xf32>
      %58 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%cst_4 : f32) outs(%57 : tensor<1x1x100x16xf32>) {
      ^bb0(%59: f32, %60: f32):
        linalg.yield %59 : f32
      } -> tensor<1x1x100x16xf32>
      %expanded_2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%41, %7 : tensor<1x1x100x100xf32>, tensor<1x100x16xf32>) outs(%58 : tensor<1x1x100x16xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%61: f32, %62: f32, %63: f32):
        %64 = arith.mulf %61, %62 : f32
        %65 = arith.addf %63, %64 : f32
        linalg.yield %65 : f32
      } -> tensor<1x1x100x16xf32>
      %66 = tensor.empty() : tensor<1x1x100x16xf32>
      %expanded_3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_2, %55, %39 : tensor<1x1x100x16xf32>, tensor<1x1x100xf32>, tensor<1x1x100xf32>) outs(%66 : tensor<1x1x100x16xf32>) attrs =  {tilefuse.attention = "attention_0"} {
      ^bb0(%67: f32, %68: f32, %69: f32, %70: f32):
        %71 = arith.divf %67, %68 : f32
        %72 = arith.constant 0xff800000 : f32
        %73 = arith.cmpf oeq, %69, %72 : f32
        %74 = arith.select %73, %67, %71 : f32
        linalg.yield %74 : f32
      } -> tensor<1x1x100x16xf32>
      tilefuse.yield %expanded_3 : tensor<1x1x100x16xf32>
    } -> (tensor<1x1x100x16xf32>)
    func.return %expanded : tensor<1x1x100x16xf32>
  }
}
