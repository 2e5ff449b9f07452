// Two SDPA-decomposition attentions (additive mask, fully masked rows zeroed by a select)
// in one function, no unread ops: the second's rewrite used stale node indices (a
// ValueError) once the first's select was removed.
func.func @attn(%q_A: tensor<1x2x13x16xf32>, %k_A: tensor<1x2x13x16xf32>, %v_A: tensor<1x2x13x16xf32>, %bias_A: tensor<13x13xf32>, %mb_A: tensor<13x13xf32>, %oth_A: tensor<1x2x13x13xf32>, %q_B: tensor<1x2x13x16xf32>, %k_B: tensor<1x2x13x16xf32>, %v_B: tensor<1x2x13x16xf32>, %bias_B: tensor<13x13xf32>, %mb_B: tensor<13x13xf32>, %oth_B: tensor<1x2x13x13xf32>) -> (tensor<1x2x13x16xf32>, tensor<1x2x13x16xf32>) {
  %zero_A = arith.constant 0.0 : f32
  %ninf_A = arith.constant 0xFF800000 : f32
  %zero_t_A = arith.constant dense<0.0> : tensor<f32>
  %ninf_t_A = arith.constant dense<0xFF800000> : tensor<f32>
  %true_A = arith.constant true
  %false_A = arith.constant false
  %c5_A = arith.constant 5 : index
  %scale_A = arith.constant 0.25 : f32
  %zeros_A = arith.constant dense<0.0> : tensor<1x2x13x13xf32>
  %eb_A = tensor.empty() : tensor<13x13xi1>
  %keep_A = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%bias_A : tensor<13x13xf32>) outs(%eb_A : tensor<13x13xi1>) {
  ^bb0(%x_A: f32, %o_A: i1):
    %i_A = linalg.index 0 : index
    %j_A = linalg.index 1 : index
    %not5_A = arith.cmpi ne, %i_A, %c5_A : index
    %diag_A = arith.cmpi eq, %i_A, %j_A : index
    %pos_A = arith.cmpf oge, %x_A, %zero_A : f32
    %pd_A = arith.ori %pos_A, %diag_A : i1
    %r0_A = arith.andi %not5_A, %pd_A : i1
    %r_A = arith.select %false_A, %pd_A, %r0_A : i1
    linalg.yield %r_A : i1
  } -> tensor<13x13xi1>
  %mk_A = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%mb_A : tensor<13x13xf32>) outs(%eb_A : tensor<13x13xi1>) {
  ^bb0(%x_A: f32, %o_A: i1):
    %c_A = arith.cmpf olt, %x_A, %zero_A : f32
    linalg.yield %c_A : i1
  } -> tensor<13x13xi1>
  %ef_A = tensor.empty() : tensor<13x13xf32>
  %add_A = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%keep_A, %zero_t_A, %ninf_t_A : tensor<13x13xi1>, tensor<f32>, tensor<f32>) outs(%ef_A : tensor<13x13xf32>) {
  ^bb0(%c_A: i1, %x_A: f32, %y_A: f32, %o_A: f32):
    %r_A = arith.select %c_A, %x_A, %y_A : f32
    linalg.yield %r_A : f32
  } -> tensor<13x13xf32>
  %es_A = tensor.empty() : tensor<1x2x13x13xf32>
  %is_A = linalg.fill ins(%zero_A : f32) outs(%es_A : tensor<1x2x13x13xf32>) -> tensor<1x2x13x13xf32>
  %s_A = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q_A, %k_A : tensor<1x2x13x16xf32>, tensor<1x2x13x16xf32>) outs(%is_A : tensor<1x2x13x13xf32>) {
  ^bb0(%x_A: f32, %y_A: f32, %acc_A: f32):
    %m_A = arith.mulf %x_A, %y_A : f32
    %r_A = arith.addf %acc_A, %m_A : f32
    linalg.yield %r_A : f32
  } -> tensor<1x2x13x13xf32>
  %u_A = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s_A, %add_A : tensor<1x2x13x13xf32>, tensor<13x13xf32>) outs(%es_A : tensor<1x2x13x13xf32>) {
  ^bb0(%x_A: f32, %y_A: f32, %o_A: f32):
    %t_A = arith.mulf %x_A, %scale_A : f32
    %r_A = arith.addf %t_A, %y_A : f32
    linalg.yield %r_A : f32
  } -> tensor<1x2x13x13xf32>
  %er_A = tensor.empty() : tensor<1x2x13xf32>
  %im_A = linalg.fill ins(%ninf_A : f32) outs(%er_A : tensor<1x2x13xf32>) -> tensor<1x2x13xf32>
  %mx_A = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%u_A : tensor<1x2x13x13xf32>) outs(%im_A : tensor<1x2x13xf32>) {
  ^bb0(%x_A: f32, %acc_A: f32):
    %r_A = arith.maximumf %x_A, %acc_A : f32
    linalg.yield %r_A : f32
  } -> tensor<1x2x13xf32>
  %ex_A = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%u_A, %mx_A : tensor<1x2x13x13xf32>, tensor<1x2x13xf32>) outs(%es_A : tensor<1x2x13x13xf32>) {
  ^bb0(%x_A: f32, %y_A: f32, %o_A: f32):
    %d_A = arith.subf %x_A, %y_A : f32
    %r_A = math.exp %d_A : f32
    linalg.yield %r_A : f32
  } -> tensor<1x2x13x13xf32>
  %iz_A = linalg.fill ins(%zero_A : f32) outs(%er_A : tensor<1x2x13xf32>) -> tensor<1x2x13xf32>
  %l_A = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex_A : tensor<1x2x13x13xf32>) outs(%iz_A : tensor<1x2x13xf32>) {
  ^bb0(%x_A: f32, %acc_A: f32):
    %r_A = arith.addf %x_A, %acc_A : f32
    linalg.yield %r_A : f32
  } -> tensor<1x2x13xf32>
  %p_A = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex_A, %l_A : tensor<1x2x13x13xf32>, tensor<1x2x13xf32>) outs(%es_A : tensor<1x2x13x13xf32>) {
  ^bb0(%x_A: f32, %y_A: f32, %o_A: f32):
    %r_A = arith.divf %x_A, %y_A : f32
    linalg.yield %r_A : f32
  } -> tensor<1x2x13x13xf32>
  %ei_A = tensor.empty() : tensor<1x2x13x13xi1>
  %isninf_A = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%u_A : tensor<1x2x13x13xf32>) outs(%ei_A : tensor<1x2x13x13xi1>) {
  ^bb0(%x_A: f32, %o_A: i1):
    %r_A = arith.cmpf oeq, %x_A, %ninf_A : f32
    linalg.yield %r_A : i1
  } -> tensor<1x2x13x13xi1>
  %erb_A = tensor.empty() : tensor<1x2x13xi1>
  %it_A = linalg.fill ins(%true_A : i1) outs(%erb_A : tensor<1x2x13xi1>) -> tensor<1x2x13xi1>
  %all_A = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%isninf_A : tensor<1x2x13x13xi1>) outs(%it_A : tensor<1x2x13xi1>) {
  ^bb0(%x_A: i1, %acc_A: i1):
    %r_A = arith.andi %x_A, %acc_A : i1
    linalg.yield %r_A : i1
  } -> tensor<1x2x13xi1>
  %pz_A = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%all_A, %zeros_A, %p_A : tensor<1x2x13xi1>, tensor<1x2x13x13xf32>, tensor<1x2x13x13xf32>) outs(%es_A : tensor<1x2x13x13xf32>) {
  ^bb0(%a0_A: i1, %a1_A: f32, %a2_A: f32, %o_A: f32):
    %r_A = arith.select %a0_A, %a1_A, %a2_A : f32
    linalg.yield %r_A : f32
  } -> tensor<1x2x13x13xf32>
  %eo_A = tensor.empty() : tensor<1x2x13x16xf32>
  %io_A = linalg.fill ins(%zero_A : f32) outs(%eo_A : tensor<1x2x13x16xf32>) -> tensor<1x2x13x16xf32>
  %o_A = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%pz_A, %v_A : tensor<1x2x13x13xf32>, tensor<1x2x13x16xf32>) outs(%io_A : tensor<1x2x13x16xf32>) {
  ^bb0(%x_A: f32, %y_A: f32, %acc_A: f32):
    %m_A = arith.mulf %x_A, %y_A : f32
    %r_A = arith.addf %acc_A, %m_A : f32
    linalg.yield %r_A : f32
  } -> tensor<1x2x13x16xf32>
  %zero_B = arith.constant 0.0 : f32
  %ninf_B = arith.constant 0xFF800000 : f32
  %zero_t_B = arith.constant dense<0.0> : tensor<f32>
  %ninf_t_B = arith.constant dense<0xFF800000> : tensor<f32>
  %true_B = arith.constant true
  %false_B = arith.constant false
  %c5_B = arith.constant 5 : index
  %scale_B = arith.constant 0.25 : f32
  %zeros_B = arith.constant dense<0.0> : tensor<1x2x13x13xf32>
  %eb_B = tensor.empty() : tensor<13x13xi1>
  %keep_B = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%bias_B : tensor<13x13xf32>) outs(%eb_B : tensor<13x13xi1>) {
  ^bb0(%x_B: f32, %o_B: i1):
    %i_B = linalg.index 0 : index
    %j_B = linalg.index 1 : index
    %not5_B = arith.cmpi ne, %i_B, %c5_B : index
    %diag_B = arith.cmpi eq, %i_B, %j_B : index
    %pos_B = arith.cmpf oge, %x_B, %zero_B : f32
    %pd_B = arith.ori %pos_B, %diag_B : i1
    %r0_B = arith.andi %not5_B, %pd_B : i1
    %r_B = arith.select %false_B, %pd_B, %r0_B : i1
    linalg.yield %r_B : i1
  } -> tensor<13x13xi1>
  %mk_B = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%mb_B : tensor<13x13xf32>) outs(%eb_B : tensor<13x13xi1>) {
  ^bb0(%x_B: f32, %o_B: i1):
    %c_B = arith.cmpf olt, %x_B, %zero_B : f32
    linalg.yield %c_B : i1
  } -> tensor<13x13xi1>
  %ef_B = tensor.empty() : tensor<13x13xf32>
  %add_B = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%keep_B, %zero_t_B, %ninf_t_B : tensor<13x13xi1>, tensor<f32>, tensor<f32>) outs(%ef_B : tensor<13x13xf32>) {
  ^bb0(%c_B: i1, %x_B: f32, %y_B: f32, %o_B: f32):
    %r_B = arith.select %c_B, %x_B, %y_B : f32
    linalg.yield %r_B : f32
  } -> tensor<13x13xf32>
  %es_B = tensor.empty() : tensor<1x2x13x13xf32>
  %is_B = linalg.fill ins(%zero_B : f32) outs(%es_B : tensor<1x2x13x13xf32>) -> tensor<1x2x13x13xf32>
  %s_B = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q_B, %k_B : tensor<1x2x13x16xf32>, tensor<1x2x13x16xf32>) outs(%is_B : tensor<1x2x13x13xf32>) {
  ^bb0(%x_B: f32, %y_B: f32, %acc_B: f32):
    %m_B = arith.mulf %x_B, %y_B : f32
    %r_B = arith.addf %acc_B, %m_B : f32
    linalg.yield %r_B : f32
  } -> tensor<1x2x13x13xf32>
  %u_B = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s_B, %add_B : tensor<1x2x13x13xf32>, tensor<13x13xf32>) outs(%es_B : tensor<1x2x13x13xf32>) {
  ^bb0(%x_B: f32, %y_B: f32, %o_B: f32):
    %t_B = arith.mulf %x_B, %scale_B : f32
    %r_B = arith.addf %t_B, %y_B : f32
    linalg.yield %r_B : f32
  } -> tensor<1x2x13x13xf32>
  %er_B = tensor.empty() : tensor<1x2x13xf32>
  %im_B = linalg.fill ins(%ninf_B : f32) outs(%er_B : tensor<1x2x13xf32>) -> tensor<1x2x13xf32>
  %mx_B = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%u_B : tensor<1x2x13x13xf32>) outs(%im_B : tensor<1x2x13xf32>) {
  ^bb0(%x_B: f32, %acc_B: f32):
    %r_B = arith.maximumf %x_B, %acc_B : f32
    linalg.yield %r_B : f32
  } -> tensor<1x2x13xf32>
  %ex_B = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%u_B, %mx_B : tensor<1x2x13x13xf32>, tensor<1x2x13xf32>) outs(%es_B : tensor<1x2x13x13xf32>) {
  ^bb0(%x_B: f32, %y_B: f32, %o_B: f32):
    %d_B = arith.subf %x_B, %y_B : f32
    %r_B = math.exp %d_B : f32
    linalg.yield %r_B : f32
  } -> tensor<1x2x13x13xf32>
  %iz_B = linalg.fill ins(%zero_B : f32) outs(%er_B : tensor<1x2x13xf32>) -> tensor<1x2x13xf32>
  %l_B = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex_B : tensor<1x2x13x13xf32>) outs(%iz_B : tensor<1x2x13xf32>) {
  ^bb0(%x_B: f32, %acc_B: f32):
    %r_B = arith.addf %x_B, %acc_B : f32
    linalg.yield %r_B : f32
  } -> tensor<1x2x13xf32>
  %p_B = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex_B, %l_B : tensor<1x2x13x13xf32>, tensor<1x2x13xf32>) outs(%es_B : tensor<1x2x13x13xf32>) {
  ^bb0(%x_B: f32, %y_B: f32, %o_B: f32):
    %r_B = arith.divf %x_B, %y_B : f32
    linalg.yield %r_B : f32
  } -> tensor<1x2x13x13xf32>
  %ei_B = tensor.empty() : tensor<1x2x13x13xi1>
  %isninf_B = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%u_B : tensor<1x2x13x13xf32>) outs(%ei_B : tensor<1x2x13x13xi1>) {
  ^bb0(%x_B: f32, %o_B: i1):
    %r_B = arith.cmpf oeq, %x_B, %ninf_B : f32
    linalg.yield %r_B : i1
  } -> tensor<1x2x13x13xi1>
  %erb_B = tensor.empty() : tensor<1x2x13xi1>
  %it_B = linalg.fill ins(%true_B : i1) outs(%erb_B : tensor<1x2x13xi1>) -> tensor<1x2x13xi1>
  %all_B = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%isninf_B : tensor<1x2x13x13xi1>) outs(%it_B : tensor<1x2x13xi1>) {
  ^bb0(%x_B: i1, %acc_B: i1):
    %r_B = arith.andi %x_B, %acc_B : i1
    linalg.yield %r_B : i1
  } -> tensor<1x2x13xi1>
  %pz_B = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%all_B, %p_B : tensor<1x2x13xi1>, tensor<1x2x13x13xf32>) outs(%es_B : tensor<1x2x13x13xf32>) {
  ^bb0(%a0_B: i1, %a1_B: f32, %o_B: f32):
    %r_B = arith.select %a0_B, %zero_B, %a1_B : f32
    linalg.yield %r_B : f32
  } -> tensor<1x2x13x13xf32>
  %eo_B = tensor.empty() : tensor<1x2x13x16xf32>
  %io_B = linalg.fill ins(%zero_B : f32) outs(%eo_B : tensor<1x2x13x16xf32>) -> tensor<1x2x13x16xf32>
  %o_B = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%pz_B, %v_B : tensor<1x2x13x13xf32>, tensor<1x2x13x16xf32>) outs(%io_B : tensor<1x2x13x16xf32>) {
  ^bb0(%x_B: f32, %y_B: f32, %acc_B: f32):
    %m_B = arith.mulf %x_B, %y_B : f32
    %r_B = arith.addf %acc_B, %m_B : f32
    linalg.yield %r_B : f32
  } -> tensor<1x2x13x16xf32>
  return %o_A, %o_B : tensor<1x2x13x16xf32>, tensor<1x2x13x16xf32>
}
