module {
  func.func @llama(%arg0: tensor<2x2xi32> {mt.input = "tokens"}, %arg1: tensor<2x2xi32> {mt.input = "labels"}, %arg2: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "vocab"}, mt.param = "model.embed_tokens.weight"}, %arg3: tensor<4xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.0.input_layernorm.weight"}, %arg4: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.self_attn.q_proj.weight"}, %arg5: tensor<2x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.self_attn.k_proj.weight"}, %arg6: tensor<2x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.self_attn.v_proj.weight"}, %arg7: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "row"}, mt.param = "model.layers.0.self_attn.o_proj.weight"}, %arg8: tensor<4xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.0.post_attention_layernorm.weight"}, %arg9: tensor<3x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.0.block_sparse_moe.gate.weight"}, %arg10: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.block_sparse_moe.experts.0.w1.weight"}, %arg11: tensor<4x8xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "row"}, mt.param = "model.layers.0.block_sparse_moe.experts.0.w2.weight"}, %arg12: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.block_sparse_moe.experts.0.w3.weight"}, %arg13: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.block_sparse_moe.experts.1.w1.weight"}, %arg14: tensor<4x8xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "row"}, mt.param = "model.layers.0.block_sparse_moe.experts.1.w2.weight"}, %arg15: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.block_sparse_moe.experts.1.w3.weight"}, %arg16: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.block_sparse_moe.experts.2.w1.weight"}, %arg17: tensor<4x8xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "row"}, mt.param = "model.layers.0.block_sparse_moe.experts.2.w2.weight"}, %arg18: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.block_sparse_moe.experts.2.w3.weight"}, %arg19: tensor<4xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.1.input_layernorm.weight"}, %arg20: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.1.self_attn.q_proj.weight"}, %arg21: tensor<2x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.1.self_attn.k_proj.weight"}, %arg22: tensor<2x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.1.self_attn.v_proj.weight"}, %arg23: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "row"}, mt.param = "model.layers.1.self_attn.o_proj.weight"}, %arg24: tensor<4xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.1.post_attention_layernorm.weight"}, %arg25: tensor<3x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.1.block_sparse_moe.gate.weight"}, %arg26: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.1.block_sparse_moe.experts.0.w1.weight"}, %arg27: tensor<4x8xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "row"}, mt.param = "model.layers.1.block_sparse_moe.experts.0.w2.weight"}, %arg28: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.1.block_sparse_moe.experts.0.w3.weight"}, %arg29: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.1.block_sparse_moe.experts.1.w1.weight"}, %arg30: tensor<4x8xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "row"}, mt.param = "model.layers.1.block_sparse_moe.experts.1.w2.weight"}, %arg31: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.1.block_sparse_moe.experts.1.w3.weight"}, %arg32: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.1.block_sparse_moe.experts.2.w1.weight"}, %arg33: tensor<4x8xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "row"}, mt.param = "model.layers.1.block_sparse_moe.experts.2.w2.weight"}, %arg34: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.1.block_sparse_moe.experts.2.w3.weight"}, %arg35: tensor<4xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "model.norm.weight"}) -> (tensor<f32> {mt.output = "loss"}) {
    %0 = mt.embedding %arg2, %arg0 : (tensor<8x4xf32>, tensor<2x2xi32>) -> tensor<2x2x4xf32>
    %1 = mt.rms_norm %0, %arg3 {epsilon = 1.000000e-05 : f64, mt.layer = 0 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %2 = mt.matmul %1, %arg4 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %3 = mt.split_heads %2 {mt.layer = 0 : i64} : tensor<2x2x4xf32> -> tensor<2x2x2x2xf32>
    %4 = mt.rope %3 {mt.layer = 0 : i64, theta = 1.000000e+06 : f64} : tensor<2x2x2x2xf32>
    %5 = mt.matmul %1, %arg5 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<2x4xf32>) -> tensor<2x2x2xf32>
    %6 = mt.split_heads %5 {mt.layer = 0 : i64} : tensor<2x2x2xf32> -> tensor<2x1x2x2xf32>
    %7 = mt.rope %6 {mt.layer = 0 : i64, theta = 1.000000e+06 : f64} : tensor<2x1x2x2xf32>
    %8 = mt.matmul %1, %arg6 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<2x4xf32>) -> tensor<2x2x2xf32>
    %9 = mt.split_heads %8 {mt.layer = 0 : i64} : tensor<2x2x2xf32> -> tensor<2x1x2x2xf32>
    %10 = mt.repeat_kv %7 {groups = 2 : i64, mt.layer = 0 : i64} : tensor<2x1x2x2xf32> -> tensor<2x2x2x2xf32>
    %11 = mt.repeat_kv %9 {groups = 2 : i64, mt.layer = 0 : i64} : tensor<2x1x2x2xf32> -> tensor<2x2x2x2xf32>
    %12 = mt.attention %4, %10, %11 {mt.layer = 0 : i64} : tensor<2x2x2x2xf32>
    %13 = mt.merge_heads %12 {mt.layer = 0 : i64} : tensor<2x2x2x2xf32> -> tensor<2x2x4xf32>
    %14 = mt.matmul %13, %arg7 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %15 = mt.add %0, %14 {mt.layer = 0 : i64} : tensor<2x2x4xf32>
    %16 = mt.rms_norm %15, %arg8 {epsilon = 1.000000e-05 : f64, mt.layer = 0 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %17 = mt.matmul %16, %arg9 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<3x4xf32>) -> tensor<2x2x3xf32>
    %weights, %experts = mt.top_k_gating %17 {k = 2 : i64, mt.layer = 0 : i64} : tensor<2x2x3xf32> -> tensor<2x2x2xf32>, tensor<2x2x2xi32>
    %18 = mt.router_z_loss %17 {coefficient = 1.000000e-02 : f64, mt.layer = 0 : i64} : tensor<2x2x3xf32>
    %positions, %offsets = mt.moe_route %experts {mt.layer = 0 : i64, num_experts = 3 : i64} : tensor<2x2x2xi32> -> tensor<2x2x2xi32>, tensor<4xi32>
    %19 = mt.moe_permute %16, %positions {mt.layer = 0 : i64} : tensor<2x2x4xf32>, tensor<2x2x2xi32> -> tensor<8x4xf32>
    %20 = mt.grouped_matmul %19, %offsets, %arg10, %arg13, %arg16 transpose_b {mt.layer = 0 : i64} : (tensor<8x4xf32>, tensor<4xi32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x8xf32>
    %21 = mt.grouped_matmul %19, %offsets, %arg12, %arg15, %arg18 transpose_b {mt.layer = 0 : i64} : (tensor<8x4xf32>, tensor<4xi32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x8xf32>
    %22 = mt.silu %20 {mt.layer = 0 : i64} : tensor<8x8xf32>
    %23 = mt.mul %22, %21 {mt.layer = 0 : i64} : tensor<8x8xf32>
    %24 = mt.grouped_matmul %23, %offsets, %arg11, %arg14, %arg17 transpose_b {mt.layer = 0 : i64} : (tensor<8x8xf32>, tensor<4xi32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x4xf32>
    %25 = mt.moe_unpermute %24, %positions weights(%weights : tensor<2x2x2xf32>) {mt.layer = 0 : i64} : tensor<8x4xf32>, tensor<2x2x2xi32> -> tensor<2x2x4xf32>
    %26 = mt.add %15, %25 {mt.layer = 0 : i64} : tensor<2x2x4xf32>
    %27 = mt.rms_norm %26, %arg19 {epsilon = 1.000000e-05 : f64, mt.layer = 1 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %28 = mt.matmul %27, %arg20 transpose_b {mt.layer = 1 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %29 = mt.split_heads %28 {mt.layer = 1 : i64} : tensor<2x2x4xf32> -> tensor<2x2x2x2xf32>
    %30 = mt.rope %29 {mt.layer = 1 : i64, theta = 1.000000e+06 : f64} : tensor<2x2x2x2xf32>
    %31 = mt.matmul %27, %arg21 transpose_b {mt.layer = 1 : i64} : (tensor<2x2x4xf32>, tensor<2x4xf32>) -> tensor<2x2x2xf32>
    %32 = mt.split_heads %31 {mt.layer = 1 : i64} : tensor<2x2x2xf32> -> tensor<2x1x2x2xf32>
    %33 = mt.rope %32 {mt.layer = 1 : i64, theta = 1.000000e+06 : f64} : tensor<2x1x2x2xf32>
    %34 = mt.matmul %27, %arg22 transpose_b {mt.layer = 1 : i64} : (tensor<2x2x4xf32>, tensor<2x4xf32>) -> tensor<2x2x2xf32>
    %35 = mt.split_heads %34 {mt.layer = 1 : i64} : tensor<2x2x2xf32> -> tensor<2x1x2x2xf32>
    %36 = mt.repeat_kv %33 {groups = 2 : i64, mt.layer = 1 : i64} : tensor<2x1x2x2xf32> -> tensor<2x2x2x2xf32>
    %37 = mt.repeat_kv %35 {groups = 2 : i64, mt.layer = 1 : i64} : tensor<2x1x2x2xf32> -> tensor<2x2x2x2xf32>
    %38 = mt.attention %30, %36, %37 {mt.layer = 1 : i64} : tensor<2x2x2x2xf32>
    %39 = mt.merge_heads %38 {mt.layer = 1 : i64} : tensor<2x2x2x2xf32> -> tensor<2x2x4xf32>
    %40 = mt.matmul %39, %arg23 transpose_b {mt.layer = 1 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %41 = mt.add %26, %40 {mt.layer = 1 : i64} : tensor<2x2x4xf32>
    %42 = mt.rms_norm %41, %arg24 {epsilon = 1.000000e-05 : f64, mt.layer = 1 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %43 = mt.matmul %42, %arg25 transpose_b {mt.layer = 1 : i64} : (tensor<2x2x4xf32>, tensor<3x4xf32>) -> tensor<2x2x3xf32>
    %weights_0, %experts_1 = mt.top_k_gating %43 {k = 2 : i64, mt.layer = 1 : i64} : tensor<2x2x3xf32> -> tensor<2x2x2xf32>, tensor<2x2x2xi32>
    %44 = mt.router_z_loss %43 {coefficient = 1.000000e-02 : f64, mt.layer = 1 : i64} : tensor<2x2x3xf32>
    %positions_2, %offsets_3 = mt.moe_route %experts_1 {mt.layer = 1 : i64, num_experts = 3 : i64} : tensor<2x2x2xi32> -> tensor<2x2x2xi32>, tensor<4xi32>
    %45 = mt.moe_permute %42, %positions_2 {mt.layer = 1 : i64} : tensor<2x2x4xf32>, tensor<2x2x2xi32> -> tensor<8x4xf32>
    %46 = mt.grouped_matmul %45, %offsets_3, %arg26, %arg29, %arg32 transpose_b {mt.layer = 1 : i64} : (tensor<8x4xf32>, tensor<4xi32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x8xf32>
    %47 = mt.grouped_matmul %45, %offsets_3, %arg28, %arg31, %arg34 transpose_b {mt.layer = 1 : i64} : (tensor<8x4xf32>, tensor<4xi32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x8xf32>
    %48 = mt.silu %46 {mt.layer = 1 : i64} : tensor<8x8xf32>
    %49 = mt.mul %48, %47 {mt.layer = 1 : i64} : tensor<8x8xf32>
    %50 = mt.grouped_matmul %49, %offsets_3, %arg27, %arg30, %arg33 transpose_b {mt.layer = 1 : i64} : (tensor<8x8xf32>, tensor<4xi32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x4xf32>
    %51 = mt.moe_unpermute %50, %positions_2 weights(%weights_0 : tensor<2x2x2xf32>) {mt.layer = 1 : i64} : tensor<8x4xf32>, tensor<2x2x2xi32> -> tensor<2x2x4xf32>
    %52 = mt.add %41, %51 {mt.layer = 1 : i64} : tensor<2x2x4xf32>
    %53 = mt.rms_norm %52, %arg35 {epsilon = 1.000000e-05 : f64} : tensor<2x2x4xf32>, tensor<4xf32>
    %54 = mt.matmul %53, %arg2 transpose_b : (tensor<2x2x4xf32>, tensor<8x4xf32>) -> tensor<2x2x8xf32>
    %55 = mt.cross_entropy %54, %arg1 : (tensor<2x2x8xf32>, tensor<2x2xi32>) -> tensor<f32>
    %56 = mt.add %55, %18 : tensor<f32>
    %57 = mt.add %56, %44 : tensor<f32>
    return %57 : tensor<f32>
  }
}
