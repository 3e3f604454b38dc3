namespace Hyder.Checker;

/// <summary>
/// Within one committed transaction, a read must agree with what the transaction already knows
/// about the key: its earlier read plus its own appends since (lists), or its last read or write
/// (registers). Without an earlier read, a list read must at least end with the transaction's
/// own appends so far.
/// </summary>
internal static class InternalConsistency
{
    public static void Analyze(Inference inf)
    {
        var lists = new Dictionary<long, (List<long>? Known, List<long> Own)>();
        var registers = new Dictionary<long, long?>();
        foreach (var t in inf.Txns)
        {
            if (t.Status != TxnStatus.Ok)
            {
                continue;
            }

            lists.Clear();
            registers.Clear();
            foreach (var m in t.Mops)
            {
                switch (m.Kind)
                {
                    case MopKind.Append:
                        if (!lists.TryGetValue(m.Key, out var s))
                        {
                            lists[m.Key] = s = (null, []);
                        }

                        (s.Known ?? s.Own).Add(m.Value!.Value);
                        break;
                    case MopKind.ReadList when m.Known:
                        if (lists.TryGetValue(m.Key, out var state) && !Agrees(m.List!, state.Known, state.Own))
                        {
                            var expected = state.Known is null ? $"ending in {Mop.FormatList(state.Own)}" : Mop.FormatList(state.Known);
                            inf.Report(Anomalies.Internal, $"T{t.Id} read list {m.Key} as {Mop.FormatList(m.List!)}, but its own earlier reads and appends say {expected}", t.Id);
                        }

                        lists[m.Key] = ([.. m.List!], []);
                        break;
                    case MopKind.Write:
                        registers[m.Key] = m.Value;
                        break;
                    case MopKind.ReadRegister when m.Known:
                        if (registers.TryGetValue(m.Key, out var known) && known != m.Value)
                        {
                            inf.Report(Anomalies.Internal, $"T{t.Id} read register {m.Key} = {m.Value?.ToString(System.Globalization.CultureInfo.InvariantCulture) ?? "nil"}, but its own earlier read or write says {known?.ToString(System.Globalization.CultureInfo.InvariantCulture) ?? "nil"}", t.Id);
                        }

                        registers[m.Key] = m.Value;
                        break;
                    default:
                        break;
                }
            }
        }
    }

    private static bool Agrees(IReadOnlyList<long> read, List<long>? known, List<long> own)
    {
        if (known is not null)
        {
            return read.SequenceEqual(known);
        }

        if (read.Count < own.Count)
        {
            return false;
        }

        for (var i = 0; i < own.Count; i++)
        {
            if (read[read.Count - own.Count + i] != own[i])
            {
                return false;
            }
        }

        return true;
    }
}
