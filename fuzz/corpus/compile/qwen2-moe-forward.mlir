module {
  func.func @llama(%arg0: tensor<2x2xi32> {mt.input = "tokens"}, %arg1: tensor<2x2xi32> {mt.input = "labels"}, %arg2: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "vocab"}, mt.param = "model.embed_tokens.weight"}, %arg3: tensor<4xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.0.input_layernorm.weight"}, %arg4: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.self_attn.q_proj.weight"}, %arg5: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.self_attn.q_proj.bias"}, %arg6: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.self_attn.k_proj.weight"}, %arg7: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.self_attn.k_proj.bias"}, %arg8: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.self_attn.v_proj.weight"}, %arg9: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.self_attn.v_proj.bias"}, %arg10: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "row"}, mt.param = "model.layers.0.self_attn.o_proj.weight"}, %arg11: tensor<4xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.0.post_attention_layernorm.weight"}, %arg12: tensor<3x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.0.mlp.gate.weight"}, %arg13: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.mlp.experts.0.gate_proj.weight"}, %arg14: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.mlp.experts.0.up_proj.weight"}, %arg15: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "row"}, mt.param = "model.layers.0.mlp.experts.0.down_proj.weight"}, %arg16: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.mlp.experts.1.gate_proj.weight"}, %arg17: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.mlp.experts.1.up_proj.weight"}, %arg18: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "row"}, mt.param = "model.layers.0.mlp.experts.1.down_proj.weight"}, %arg19: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.mlp.experts.2.gate_proj.weight"}, %arg20: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.mlp.experts.2.up_proj.weight"}, %arg21: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "row"}, mt.param = "model.layers.0.mlp.experts.2.down_proj.weight"}, %arg22: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.mlp.shared_expert.gate_proj.weight"}, %arg23: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.mlp.shared_expert.up_proj.weight"}, %arg24: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "row"}, mt.param = "model.layers.0.mlp.shared_expert.down_proj.weight"}, %arg25: tensor<1x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.0.mlp.shared_expert_gate.weight"}, %arg26: tensor<4xf32> {mt.init = {kind = "ones"}, mt.parallel = {role = "replicated"}, mt.param = "model.norm.weight"}) -> (tensor<f32> {mt.output = "loss"}) {
    %0 = mt.embedding %arg2, %arg0 : (tensor<8x4xf32>, tensor<2x2xi32>) -> tensor<2x2x4xf32>
    %1 = mt.rms_norm %0, %arg3 {mt.layer = 0 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %2 = mt.matmul %1, %arg4 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %3 = mt.bias_add %2, %arg5 {mt.layer = 0 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %4 = mt.split_heads %3 {mt.layer = 0 : i64} : tensor<2x2x4xf32> -> tensor<2x2x2x2xf32>
    %5 = mt.rope %4 {mt.layer = 0 : i64} : tensor<2x2x2x2xf32>
    %6 = mt.matmul %1, %arg6 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %7 = mt.bias_add %6, %arg7 {mt.layer = 0 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %8 = mt.split_heads %7 {mt.layer = 0 : i64} : tensor<2x2x4xf32> -> tensor<2x2x2x2xf32>
    %9 = mt.rope %8 {mt.layer = 0 : i64} : tensor<2x2x2x2xf32>
    %10 = mt.matmul %1, %arg8 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %11 = mt.bias_add %10, %arg9 {mt.layer = 0 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %12 = mt.split_heads %11 {mt.layer = 0 : i64} : tensor<2x2x4xf32> -> tensor<2x2x2x2xf32>
    %13 = mt.attention %5, %9, %12 {mt.layer = 0 : i64} : tensor<2x2x2x2xf32>
    %14 = mt.merge_heads %13 {mt.layer = 0 : i64} : tensor<2x2x2x2xf32> -> tensor<2x2x4xf32>
    %15 = mt.matmul %14, %arg10 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %16 = mt.add %0, %15 {mt.layer = 0 : i64} : tensor<2x2x4xf32>
    %17 = mt.rms_norm %16, %arg11 {mt.layer = 0 : i64} : tensor<2x2x4xf32>, tensor<4xf32>
    %18 = mt.matmul %17, %arg12 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<3x4xf32>) -> tensor<2x2x3xf32>
    %weights, %experts = mt.top_k_gating %18 unnormalized {k = 2 : i64, mt.layer = 0 : i64} : tensor<2x2x3xf32> -> tensor<2x2x2xf32>, tensor<2x2x2xi32>
    %positions, %offsets = mt.moe_route %experts {mt.layer = 0 : i64, num_experts = 3 : i64} : tensor<2x2x2xi32> -> tensor<2x2x2xi32>, tensor<4xi32>
    %19 = mt.moe_permute %17, %positions {mt.layer = 0 : i64} : tensor<2x2x4xf32>, tensor<2x2x2xi32> -> tensor<8x4xf32>
    %20 = mt.grouped_matmul %19, %offsets, %arg13, %arg16, %arg19 transpose_b {mt.layer = 0 : i64} : (tensor<8x4xf32>, tensor<4xi32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
    %21 = mt.grouped_matmul %19, %offsets, %arg14, %arg17, %arg20 transpose_b {mt.layer = 0 : i64} : (tensor<8x4xf32>, tensor<4xi32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
    %22 = mt.silu %20 {mt.layer = 0 : i64} : tensor<8x4xf32>
    %23 = mt.mul %22, %21 {mt.layer = 0 : i64} : tensor<8x4xf32>
    %24 = mt.grouped_matmul %23, %offsets, %arg15, %arg18, %arg21 transpose_b {mt.layer = 0 : i64} : (tensor<8x4xf32>, tensor<4xi32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
    %25 = mt.moe_unpermute %24, %positions weights(%weights : tensor<2x2x2xf32>) {mt.layer = 0 : i64} : tensor<8x4xf32>, tensor<2x2x2xi32> -> tensor<2x2x4xf32>
    %26 = mt.matmul %17, %arg22 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %27 = mt.matmul %17, %arg23 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %28 = mt.silu %26 {mt.layer = 0 : i64} : tensor<2x2x4xf32>
    %29 = mt.mul %28, %27 {mt.layer = 0 : i64} : tensor<2x2x4xf32>
    %30 = mt.matmul %29, %arg24 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %31 = mt.matmul %17, %arg25 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<1x4xf32>) -> tensor<2x2x1xf32>
    %32 = mt.sigmoid_gate %30, %31 {mt.layer = 0 : i64} : tensor<2x2x4xf32>, tensor<2x2x1xf32>
    %33 = mt.add %25, %32 {mt.layer = 0 : i64} : tensor<2x2x4xf32>
    %34 = mt.add %16, %33 {mt.layer = 0 : i64} : tensor<2x2x4xf32>
    %35 = mt.rms_norm %34, %arg26 : tensor<2x2x4xf32>, tensor<4xf32>
    %36 = mt.matmul %35, %arg2 transpose_b : (tensor<2x2x4xf32>, tensor<8x4xf32>) -> tensor<2x2x8xf32>
    %37 = mt.cross_entropy %36, %arg1 : (tensor<2x2x8xf32>, tensor<2x2xi32>) -> tensor<f32>
    return %37 : tensor<f32>
  }
}
