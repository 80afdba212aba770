//! Passkeys on DynamoDB (issue 41): each is kept twice — under its operator
//! (`PASSKEY#{account}#{human}` / `{credential id}`: one `Query` lists them) and under its
//! credential id (`PKID#{credential id}` / `PKID`: a login names no operator, one `GetItem`
//! finds it). Both are written in one transaction: a registration claims the id's item on
//! condition it does not exist (a credential id is never taken over), an update on condition it
//! still does (a removed passkey is never brought back). A removal deletes the id's item first,
//! so a half-done removal never leaves a passkey that still logs in.

use ma2h_core::passkeys::Passkey;
use ma2h_core::ports::StoreError;
use ma2h_protocol::ids::{AccountId, HumanId, key_part};

use crate::DynamoStore;
use crate::codec::*;

type R<T> = Result<T, StoreError>;

fn owner_pk(account: &AccountId, human: &HumanId) -> String {
    format!("PASSKEY#{}#{}", key_part(account.as_str()), key_part(human.as_str()))
}

fn id_key(id: &str) -> Item {
    key(format!("PKID#{id}"), "PKID")
}

fn fields(mut item: Item, p: &Passkey) -> Item {
    item.insert("id".into(), s(p.id.clone()));
    item.insert("account".into(), s(p.account.to_string()));
    item.insert("human".into(), s(p.human.to_string()));
    item.insert("name".into(), s(p.name.clone()));
    item.insert("created_at".into(), n(ms(p.created_at)));
    if let Some(t) = p.last_used_at {
        item.insert("last_used_at".into(), n(ms(t)));
    }
    item.insert("state".into(), s(p.state.clone()));
    item
}

fn passkey_from(item: &Item) -> R<Passkey> {
    Ok(Passkey {
        id: get_s(item, "id")?.to_owned(),
        account: AccountId::parse(get_s(item, "account")?).ok_or_else(|| corrupt("passkey: account id"))?,
        human: HumanId::parse(get_s(item, "human")?).ok_or_else(|| corrupt("passkey: human id"))?,
        name: get_s(item, "name")?.to_owned(),
        created_at: ma2h_protocol::time::from_millis(get_n(item, "created_at")?),
        last_used_at: item
            .contains_key("last_used_at")
            .then(|| get_n(item, "last_used_at"))
            .transpose()?
            .map(ma2h_protocol::time::from_millis),
        state: get_s(item, "state")?.to_owned(),
    })
}

impl DynamoStore {
    pub(crate) async fn put_passkey_items(&self, p: &Passkey, new: bool) -> R<bool> {
        let condition = if new { "attribute_not_exists(pk)" } else { "attribute_exists(pk)" };
        let by_id = self.put(fields(id_key(&p.id), p), Some(condition), Default::default())?;
        let owner = key(owner_pk(&p.account, &p.human), &p.id);
        let by_owner = self.put(fields(owner, p), (!new).then_some(condition), Default::default())?;
        self.transact_audited(vec![by_id, by_owner]).await
    }

    pub(crate) async fn passkeys_of_operator(&self, account: &AccountId, human: &HumanId) -> R<Vec<Passkey>> {
        let mut out = Vec::new();
        for item in self.partition_items(owner_pk(account, human), None).await? {
            out.push(passkey_from(&item)?);
        }
        out.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(out)
    }

    pub(crate) async fn passkey_of_id(&self, id: &str) -> R<Option<Passkey>> {
        self.get(id_key(id)).await?.map(|i| passkey_from(&i)).transpose()
    }

    pub(crate) async fn delete_passkey_items(&self, account: &AccountId, human: &HumanId, id: &str) -> R<bool> {
        // only the owner's own passkey: the id's item is checked before it goes
        match self.passkey_of_id(id).await? {
            Some(p) if p.account == *account && p.human == *human => {
                self.delete_key(format!("PKID#{id}"), "PKID").await?;
            }
            _ => {}
        }
        self.delete_key_audited(owner_pk(account, human), id).await
    }
}
