module {
  func.func @llama(%arg0: tensor<2x2xi32> {mt.input = "tokens"}, %arg1: tensor<2x2xi32> {mt.input = "labels"}, %arg2: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "vocab"}, mt.param = "model.embed_tokens.weight"}, %arg3: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.0.input_layernorm.weight"}, %arg4: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.self_attn.q_proj.weight"}, %arg5: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.self_attn.k_proj.weight"}, %arg6: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.self_attn.v_proj.weight"}, %arg7: tensor<4x8xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "row"}, mt.param = "model.layers.0.self_attn.o_proj.weight"}, %arg8: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.mlp.gate_proj.weight"}, %arg9: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.0.mlp.up_proj.weight"}, %arg10: tensor<4x8xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "row"}, mt.param = "model.layers.0.mlp.down_proj.weight"}, %arg11: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.0.post_attention_layernorm.weight"}, %arg12: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.0.pre_feedforward_layernorm.weight"}, %arg13: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.0.post_feedforward_layernorm.weight"}, %arg14: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.1.input_layernorm.weight"}, %arg15: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.1.self_attn.q_proj.weight"}, %arg16: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.1.self_attn.k_proj.weight"}, %arg17: tensor<4x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.1.self_attn.v_proj.weight"}, %arg18: tensor<4x8xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "row"}, mt.param = "model.layers.1.self_attn.o_proj.weight"}, %arg19: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.1.mlp.gate_proj.weight"}, %arg20: tensor<8x4xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 0 : i64, role = "column"}, mt.param = "model.layers.1.mlp.up_proj.weight"}, %arg21: tensor<4x8xf32> {mt.init = {kind = "normal", std = 2.000000e-02 : f64}, mt.parallel = {dim = 1 : i64, role = "row"}, mt.param = "model.layers.1.mlp.down_proj.weight"}, %arg22: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.1.post_attention_layernorm.weight"}, %arg23: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.1.pre_feedforward_layernorm.weight"}, %arg24: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {role = "replicated"}, mt.param = "model.layers.1.post_feedforward_layernorm.weight"}, %arg25: tensor<4xf32> {mt.init = {kind = "zeros"}, mt.parallel = {role = "replicated"}, mt.param = "model.norm.weight"}) -> (tensor<f32> {mt.output = "loss"}) {
    %0 = mt.embedding %arg2, %arg0 : (tensor<8x4xf32>, tensor<2x2xi32>) -> tensor<2x2x4xf32>
    %1 = mt.scale %0 {factor = 2.000000e+00 : f64} : tensor<2x2x4xf32>
    %2 = mt.rms_norm %1, %arg3 {mt.layer = 0 : i64, zero_centered_weight} : tensor<2x2x4xf32>, tensor<4xf32>
    %3 = mt.matmul %2, %arg4 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<8x4xf32>) -> tensor<2x2x8xf32>
    %4 = mt.split_heads %3 {mt.layer = 0 : i64} : tensor<2x2x8xf32> -> tensor<2x2x2x4xf32>
    %5 = mt.rope %4 {mt.layer = 0 : i64} : tensor<2x2x2x4xf32>
    %6 = mt.matmul %2, %arg5 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %7 = mt.split_heads %6 {mt.layer = 0 : i64} : tensor<2x2x4xf32> -> tensor<2x1x2x4xf32>
    %8 = mt.rope %7 {mt.layer = 0 : i64} : tensor<2x1x2x4xf32>
    %9 = mt.matmul %2, %arg6 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %10 = mt.split_heads %9 {mt.layer = 0 : i64} : tensor<2x2x4xf32> -> tensor<2x1x2x4xf32>
    %11 = mt.repeat_kv %8 {groups = 2 : i64, mt.layer = 0 : i64} : tensor<2x1x2x4xf32> -> tensor<2x2x2x4xf32>
    %12 = mt.repeat_kv %10 {groups = 2 : i64, mt.layer = 0 : i64} : tensor<2x1x2x4xf32> -> tensor<2x2x2x4xf32>
    %13 = mt.attention %5, %11, %12 {mt.layer = 0 : i64, scale = 0.35355339059327373 : f64, softcap = 5.000000e-01 : f64, window = 1 : i64} : tensor<2x2x2x4xf32>
    %14 = mt.merge_heads %13 {mt.layer = 0 : i64} : tensor<2x2x2x4xf32> -> tensor<2x2x8xf32>
    %15 = mt.matmul %14, %arg7 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x8xf32>, tensor<4x8xf32>) -> tensor<2x2x4xf32>
    %16 = mt.rms_norm %15, %arg11 {mt.layer = 0 : i64, zero_centered_weight} : tensor<2x2x4xf32>, tensor<4xf32>
    %17 = mt.add %1, %16 {mt.layer = 0 : i64} : tensor<2x2x4xf32>
    %18 = mt.rms_norm %17, %arg12 {mt.layer = 0 : i64, zero_centered_weight} : tensor<2x2x4xf32>, tensor<4xf32>
    %19 = mt.matmul %18, %arg8 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<8x4xf32>) -> tensor<2x2x8xf32>
    %20 = mt.matmul %18, %arg9 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x4xf32>, tensor<8x4xf32>) -> tensor<2x2x8xf32>
    %21 = mt.gelu %19 {mt.layer = 0 : i64} : tensor<2x2x8xf32>
    %22 = mt.mul %21, %20 {mt.layer = 0 : i64} : tensor<2x2x8xf32>
    %23 = mt.matmul %22, %arg10 transpose_b {mt.layer = 0 : i64} : (tensor<2x2x8xf32>, tensor<4x8xf32>) -> tensor<2x2x4xf32>
    %24 = mt.rms_norm %23, %arg13 {mt.layer = 0 : i64, zero_centered_weight} : tensor<2x2x4xf32>, tensor<4xf32>
    %25 = mt.add %17, %24 {mt.layer = 0 : i64} : tensor<2x2x4xf32>
    %26 = mt.rms_norm %25, %arg14 {mt.layer = 1 : i64, zero_centered_weight} : tensor<2x2x4xf32>, tensor<4xf32>
    %27 = mt.matmul %26, %arg15 transpose_b {mt.layer = 1 : i64} : (tensor<2x2x4xf32>, tensor<8x4xf32>) -> tensor<2x2x8xf32>
    %28 = mt.split_heads %27 {mt.layer = 1 : i64} : tensor<2x2x8xf32> -> tensor<2x2x2x4xf32>
    %29 = mt.rope %28 {mt.layer = 1 : i64} : tensor<2x2x2x4xf32>
    %30 = mt.matmul %26, %arg16 transpose_b {mt.layer = 1 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %31 = mt.split_heads %30 {mt.layer = 1 : i64} : tensor<2x2x4xf32> -> tensor<2x1x2x4xf32>
    %32 = mt.rope %31 {mt.layer = 1 : i64} : tensor<2x1x2x4xf32>
    %33 = mt.matmul %26, %arg17 transpose_b {mt.layer = 1 : i64} : (tensor<2x2x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4xf32>
    %34 = mt.split_heads %33 {mt.layer = 1 : i64} : tensor<2x2x4xf32> -> tensor<2x1x2x4xf32>
    %35 = mt.repeat_kv %32 {groups = 2 : i64, mt.layer = 1 : i64} : tensor<2x1x2x4xf32> -> tensor<2x2x2x4xf32>
    %36 = mt.repeat_kv %34 {groups = 2 : i64, mt.layer = 1 : i64} : tensor<2x1x2x4xf32> -> tensor<2x2x2x4xf32>
    %37 = mt.attention %29, %35, %36 {mt.layer = 1 : i64, scale = 0.35355339059327373 : f64, softcap = 5.000000e-01 : f64} : tensor<2x2x2x4xf32>
    %38 = mt.merge_heads %37 {mt.layer = 1 : i64} : tensor<2x2x2x4xf32> -> tensor<2x2x8xf32>
    %39 = mt.matmul %38, %arg18 transpose_b {mt.layer = 1 : i64} : (tensor<2x2x8xf32>, tensor<4x8xf32>) -> tensor<2x2x4xf32>
    %40 = mt.rms_norm %39, %arg22 {mt.layer = 1 : i64, zero_centered_weight} : tensor<2x2x4xf32>, tensor<4xf32>
    %41 = mt.add %25, %40 {mt.layer = 1 : i64} : tensor<2x2x4xf32>
    %42 = mt.rms_norm %41, %arg23 {mt.layer = 1 : i64, zero_centered_weight} : tensor<2x2x4xf32>, tensor<4xf32>
    %43 = mt.matmul %42, %arg19 transpose_b {mt.layer = 1 : i64} : (tensor<2x2x4xf32>, tensor<8x4xf32>) -> tensor<2x2x8xf32>
    %44 = mt.matmul %42, %arg20 transpose_b {mt.layer = 1 : i64} : (tensor<2x2x4xf32>, tensor<8x4xf32>) -> tensor<2x2x8xf32>
    %45 = mt.gelu %43 {mt.layer = 1 : i64} : tensor<2x2x8xf32>
    %46 = mt.mul %45, %44 {mt.layer = 1 : i64} : tensor<2x2x8xf32>
    %47 = mt.matmul %46, %arg21 transpose_b {mt.layer = 1 : i64} : (tensor<2x2x8xf32>, tensor<4x8xf32>) -> tensor<2x2x4xf32>
    %48 = mt.rms_norm %47, %arg24 {mt.layer = 1 : i64, zero_centered_weight} : tensor<2x2x4xf32>, tensor<4xf32>
    %49 = mt.add %41, %48 {mt.layer = 1 : i64} : tensor<2x2x4xf32>
    %50 = mt.rms_norm %49, %arg25 {zero_centered_weight} : tensor<2x2x4xf32>, tensor<4xf32>
    %51 = mt.matmul %50, %arg2 transpose_b : (tensor<2x2x4xf32>, tensor<8x4xf32>) -> tensor<2x2x8xf32>
    %52 = mt.softcap %51 {cap = 3.000000e+00 : f64} : tensor<2x2x8xf32>
    %53 = mt.cross_entropy %52, %arg1 : (tensor<2x2x8xf32>, tensor<2x2xi32>) -> tensor<f32>
    return %53 : tensor<f32>
  }
}
